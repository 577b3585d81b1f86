package cluster_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// Handover on a leader names another voter that then leads; on a
// follower, and on the only voter, there is nothing to hand over.
func TestHandoverMovesLeadershipToAnotherVoter(t *testing.T) {
	c := inproc.Start(t, 3, inproc.Options{})
	li := c.Leader()
	f := (li + 1) % 3
	if id, err := c.Node(f).Handover(harness.Context(t, 5*time.Second)); id != "" || err != nil {
		t.Errorf("Handover on a follower = %q, %v; want nothing to hand over", id, err)
	}
	id, err := c.Node(li).Handover(harness.Context(t, 5*time.Second))
	if err != nil {
		t.Fatalf("Handover: %v", err)
	}
	if id == "" || id == c.Peer(li).ID {
		t.Fatalf("Handover named %q, want another voter", id)
	}
	if now := c.Leader(li); c.Peer(now).ID != id {
		t.Errorf("leader is %s, Handover named %s", c.Peer(now).ID, id)
	}

	one := inproc.Start(t, 1, inproc.Options{})
	one.Leader()
	if id, err := one.Node(0).Handover(harness.Context(t, 5*time.Second)); id != "" || err != nil {
		t.Errorf("Handover on the only voter = %q, %v; want nothing to hand over", id, err)
	}
	if err := one.Node(0).Ready(); err != nil {
		t.Errorf("the only voter after Handover: %v, want it still serving", err)
	}
}

// While a leader hands over, a write is refused as not ready (nothing was
// proposed, so any client may retry it at once elsewhere), not failed with
// an unknown outcome; when the transfer fails, the leader serves again.
func TestHandoverRefusesWritesAsNotReady(t *testing.T) {
	c := inproc.Start(t, 3, inproc.Options{Tweak: func(cfg *cluster.Config) {
		cfg.Transport = dropTimeoutNow{cfg.Transport.(*raft.InmemTransport)}
	}})
	li := c.Leader()
	leader := c.Node(li)
	done := make(chan error, 1)
	go func() {
		_, err := leader.Handover(harness.Context(t, time.Second))
		done <- err
	}()
	harness.WaitUntil(t, 5*time.Second, "the transfer to start", func() bool {
		return leaderTransferring(leader)
	})
	_, _, err := leader.Acquire(harness.Context(t, 5*time.Second), cluster.AcquireRequest{Secret: testSecret, Key: "during", Holder: "h", TTL: time.Second})
	if !errors.Is(err, cluster.ErrNotReady) {
		t.Errorf("acquire during the hand-over: %v, want ErrNotReady", err)
	}
	if err := <-done; err == nil {
		t.Errorf("Handover succeeded although the target never campaigned")
	}
	if err := c.OnLeader(10*time.Second, func(n *cluster.Node) error {
		_, _, err := n.Acquire(harness.Context(t, 2*time.Second), cluster.AcquireRequest{Secret: testSecret, Key: "after", Holder: "h", TTL: time.Second})
		return err
	}); err != nil {
		t.Fatalf("no write after the failed hand-over: %v", err)
	}
}
