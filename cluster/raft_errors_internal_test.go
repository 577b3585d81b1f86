package cluster

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// Raft's errors reach callers as the cluster's sentinels, which the HTTP
// API answers with a code a client can act on: a change of the
// configuration that lost leadership while committing is ErrLeadershipLost
// (as a command is), and a leadership transfer that Raft gave up on is
// ErrTimeout; both say that the outcome is unknown. What Raft refused
// before starting stays a "nothing happened" sentinel.
func TestRaftErrorsBecomeSentinels(t *testing.T) {
	giveUp := errors.New("leadership transfer timeout") // raft has no sentinel for it
	for _, tc := range []struct {
		name string
		got  error
		want error
	}{
		{"commit: leadership lost", commitError(raft.ErrLeadershipLost), ErrLeadershipLost},
		{"commit: shutdown", commitError(raft.ErrRaftShutdown), ErrShutdown},
		{"commit: transfer in progress", commitError(raft.ErrLeadershipTransferInProgress), ErrNotReady},
		{"transfer: raft gave up", transferError(giveUp), ErrTimeout},
		{"transfer: not the leader", transferError(raft.ErrNotLeader), ErrNotLeader},
		{"transfer: shutdown", transferError(raft.ErrRaftShutdown), ErrShutdown},
		{"transfer: another one in progress", transferError(raft.ErrLeadershipTransferInProgress), ErrNotReady},
	} {
		if !errors.Is(tc.got, tc.want) {
			t.Errorf("%s: got %v, want it to match %v", tc.name, tc.got, tc.want)
		}
	}
	if err := transferError(giveUp); !errors.Is(err, giveUp) {
		t.Errorf("transfer: %v does not keep Raft's error", err)
	}
}
