package rounds

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Inbound RPCs wait until the node has checked its data dir's identity
// (open): a server whose Raft state turns out to be another cluster's
// never answers a vote or an append of this one.
func TestTransportHoldsRPCsUntilOpen(t *testing.T) {
	_, a := raft.NewInmemTransport("a")
	_, b := raft.NewInmemTransport("b")
	a.Connect("b", b)
	b.Connect("a", a)
	wrapped, open := Wrap(b, NewLagTracker(time.Now), NewContacts(), nil)
	defer wrapped.(raft.WithClose).Close()
	sent := make(chan error, 1)
	go func() {
		var resp raft.RequestVoteResponse
		sent <- a.RequestVote("b", "b", &raft.RequestVoteRequest{Term: 7}, &resp)
	}()
	select {
	case rpc := <-wrapped.Consumer():
		t.Fatalf("an RPC reached Raft before open: %T", rpc.Command)
	case <-time.After(200 * time.Millisecond):
	}
	open()
	select {
	case rpc := <-wrapped.Consumer():
		if _, ok := rpc.Command.(*raft.RequestVoteRequest); !ok {
			t.Fatalf("got %T, want the vote request", rpc.Command)
		}
		rpc.Respond(&raft.RequestVoteResponse{Term: 7}, nil)
	case <-time.After(5 * time.Second):
		t.Fatal("the RPC never reached Raft after open")
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
}

// stepClock is a time source that tests move by hand.
type stepClock struct{ t time.Time }

func (c *stepClock) now() time.Time          { return c.t }
func (c *stepClock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newStepClock() *stepClock               { return &stepClock{t: time.Unix(1000, 0)} }

func TestLagTrackerTimeBehind(t *testing.T) {
	clk := newStepClock()
	l := NewLagTracker(clk.now)
	if got := l.Lag(0, 0); got.Entries != 0 || got.For != 0 {
		t.Fatalf("nothing announced: %+v, want caught up", got)
	}
	l.observeCommit(10)
	clk.advance(3 * time.Second)
	if got := l.Lag(5, 5); got.Entries != 5 || got.For != 3*time.Second {
		t.Fatalf("stuck at 5 of 10 for 3s: %d entries for %v, want 5 for 3s", got.Entries, got.For)
	}
	// The leader moves on; the node still applies nothing: the time
	// counts from the first entry it missed, not from the last announce.
	l.observeCommit(20)
	clk.advance(3 * time.Second)
	if got := l.Lag(5, 5); got.Entries != 15 || got.For != 6*time.Second {
		t.Fatalf("stuck at 5 of 20 for 6s: %d entries for %v, want 15 for 6s", got.Entries, got.For)
	}
	// Caught up: nothing behind.
	if got := l.Lag(20, 20); got.Entries != 0 || got.For != 0 {
		t.Fatalf("caught up: %+v, want 0", got)
	}
	// Applying steadily while the leader commits: behind by the time it
	// takes to apply, not by the time since it was last caught up.
	for i := uint64(1); i <= 10; i++ {
		l.observeCommit(20 + 10*i)
		clk.advance(10 * time.Millisecond)
		if got := l.Lag(20+10*i-5, 20+10*i-5); got.For > 20*time.Millisecond {
			t.Fatalf("step %d, applying steadily: behind for %v, want at most 20ms", i, got.For)
		}
	}
	// The node's own commit index counts (on the leader no one announces).
	if got := l.Lag(100, 130); got.LeaderCommit != 130 || got.Entries != 30 {
		t.Fatalf("own commit 130, applied 100: %+v, want 30 entries behind 130", got)
	}
}
