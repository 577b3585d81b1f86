//go:build tenure_unsafe_renew

package cluster

import (
	"context"
	"errors"
)

// renewals, in this build, is localRenewals: a deliberate bug, the
// negative control that the fault suite must catch (test/jepsen). Never
// built into a release.
var renewals = localRenewals

func init() {
	println("WARNING: server built with tenure_unsafe_renew: renewals skip the quorum check")
}

// localRenewals answers renewals on every node from its own state: no
// leadership check, no quorum round, and a lease that the FSM says holder
// holds is renewed even where no lessor tracks it (on a follower, or on a
// deposed leader). The HTTP API serves renewals without forwarding in this
// build (httpapi/unsafe_on.go), so every node answers them.
func localRenewals(_ context.Context, n *Node, holder string, refs []LeaseRef, hashes *secretHashes) ([]RenewResult, error) {
	out := make([]RenewResult, len(refs))
	for i, r := range refs {
		cur, err := n.heldBy(r, hashes.of(r.Secret), holder)
		if err != nil {
			out[i] = RenewResult{Err: err}
			continue
		}
		out[i] = n.renewTracked(cur)
		if errors.Is(out[i].Err, ErrNotLeader) {
			out[i] = RenewResult{Lease: LeaseView{Lease: cur}}
		}
	}
	return out, nil
}
