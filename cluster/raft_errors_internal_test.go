package cluster

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// Raft's errors reach callers as the cluster's sentinels, which the HTTP
// API answers with a code a client can act on: a change of the
// configuration that lost leadership while committing is ErrLeadershipLost
// (as a command is): the outcome is unknown. What Raft refused before
// appending stays a "nothing happened" sentinel.
func TestRaftErrorsBecomeSentinels(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  error
		want error
	}{
		{"commit: leadership lost", commitError(raft.ErrLeadershipLost), ErrLeadershipLost},
		{"commit: shutdown", commitError(raft.ErrRaftShutdown), ErrShutdown},
		{"commit: transfer in progress", commitError(raft.ErrLeadershipTransferInProgress), ErrNotReady},
	} {
		if !errors.Is(tc.got, tc.want) {
			t.Errorf("%s: got %v, want it to match %v", tc.name, tc.got, tc.want)
		}
	}
}
