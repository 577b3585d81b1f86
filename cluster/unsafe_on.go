//go:build tenure_unsafe_renew

package cluster

// UnsafeLocalRenewals makes every node answer renewals from its own state
// machine, without forwarding to the leader and without the quorum round:
// a deliberate bug, the negative control that the fault suite must catch
// (test/jepsen). Never built into a release.
const UnsafeLocalRenewals = true

func init() {
	println("WARNING: server built with tenure_unsafe_renew: renewals skip the quorum check")
}
