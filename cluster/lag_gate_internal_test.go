package cluster

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
	wrapped, open := withLag(b, newLagTracker(time.Now))
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
