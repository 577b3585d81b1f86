//go:build tenure_unsafe_identity

package cluster

// peerIdentity, in this build, checks no node ids and moves voters as
// voters: a deliberate bug, the negative control that the fault suite must
// catch (test/jepsen). Never built into a release.
var peerIdentity = identityPolicy{movesVoters: true, gossipForwarding: true}

func init() {
	println("WARNING: server built with tenure_unsafe_identity: server certificates' node ids are not checked, voters move on gossip's word and forwarding follows gossip")
}
