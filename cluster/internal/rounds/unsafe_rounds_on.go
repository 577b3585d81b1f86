//go:build tenure_unsafe_rounds

package rounds

// acceptOlderRounds, in this build, is a deliberate bug, the negative
// control that the fault suite must catch (test/jepsen): a round counts
// every voter whose latest yes, to any earlier round, was in the round's
// term, as hashicorp/raft's VerifyLeader counts any heartbeat answer.
// Never built into a release.
const acceptOlderRounds = true

func init() {
	println("WARNING: server built with tenure_unsafe_rounds: leadership rounds accept answers of older rounds")
}
