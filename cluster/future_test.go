package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// stuckFuture is a future hashicorp/raft took into its queue just before
// it shut down: nobody ever answers it.
type stuckFuture struct{ answer chan error }

func (f stuckFuture) Error() error { return <-f.answer }

// A leader's wait on a Raft future ends when the node shuts down, even if
// Raft never answers the future (it took a Barrier into its queue just
// before its shutdown): Shutdown waits for the leader's goroutines, and a
// hung wait hung the whole shutdown (a CI run of httpapi's tests hung
// 15 minutes in Node.Shutdown with establish waiting on a Barrier).
func TestFutureWaitEndsAtShutdown(t *testing.T) {
	n := &Node{shutdownCh: make(chan struct{})}
	f := stuckFuture{answer: make(chan error)}
	got := make(chan error, 1)
	go func() { got <- n.futureError(f) }()
	select {
	case err := <-got:
		t.Fatalf("futureError returned %v before anything happened", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(n.shutdownCh)
	select {
	case err := <-got:
		if !errors.Is(err, raft.ErrRaftShutdown) {
			t.Fatalf("futureError at shutdown = %v, want raft.ErrRaftShutdown", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("futureError still waits after the node shut down")
	}
	// An answered future gives its answer, shutdown or not.
	answered := stuckFuture{answer: make(chan error, 1)}
	answered.answer <- nil
	if err := n.futureError(answered); err != nil {
		t.Fatalf("an answered future after shutdown: %v, want its answer (nil)", err)
	}
}
