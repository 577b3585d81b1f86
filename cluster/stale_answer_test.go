package cluster_test

import (
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// holdAnswer parks, once armed, the answer of one heartbeat from a peer
// before the leader's Raft sees it: a slow link, or a leader paused by GC,
// SIGSTOP or a VM freeze.
type holdAnswer struct {
	*raft.InmemTransport
	mu      sync.Mutex
	peer    raft.ServerAddress
	armed   bool
	held    chan struct{}
	release chan struct{}
}

func (h *holdAnswer) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	err := h.InmemTransport.AppendEntries(id, target, args, resp)
	h.mu.Lock()
	hold := h.armed && target == h.peer && len(args.Entries) == 0 && err == nil
	if hold {
		h.armed = false
	}
	h.mu.Unlock()
	if hold {
		close(h.held)
		<-h.release
	}
	return err
}

// Guarantee (safety): a leader that was deposed while a peer's answer to an
// old heartbeat was still on its way must not take that answer as proof of
// leadership for a renewal that arrived later. Otherwise the new leader,
// which promoted the lease before that renewal, frees it before TTL has
// passed since the renewal was sent.
func TestDeposedLeaderIgnoresAnswersToOlderHeartbeats(t *testing.T) {
	var wrap *holdAnswer
	c := inproc.Start(t, 3, inproc.Options{Tweak: func(cfg *cluster.Config) {
		if cfg.NodeID == "n1" {
			// Slow to notice it lost its quorum, so the stale answer
			// arrives while it still believes it leads.
			cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = 3*time.Second, 3*time.Second, 3*time.Second
			cfg.MinTTL = 6 * time.Second
			wrap = &holdAnswer{InmemTransport: cfg.Transport.(*raft.InmemTransport), held: make(chan struct{}), release: make(chan struct{})}
			cfg.Transport = wrap
		}
	}})
	if li := c.Leader(); li != 0 {
		if _, err := c.Node(li).TransferLeadership(harness.Context(t, 5*time.Second), "n1"); err != nil {
			t.Fatalf("transfer to n1: %v", err)
		}
	}
	harness.WaitUntil(t, 10*time.Second, "n1 to establish", func() bool { return c.Node(0).Ready() == nil })
	n1 := c.Node(0)
	lease, _, err := n1.Acquire(harness.Context(t, 5*time.Second), cluster.AcquireRequest{Key: "k", Holder: "h", TTL: 6 * time.Second})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	// Park one heartbeat answer from n2, then cut n1 off; n2 and n3 elect
	// a new leader, which promotes the lease.
	wrap.mu.Lock()
	wrap.peer, wrap.armed = raft.ServerAddress(c.Peer(1).RaftAddr), true
	wrap.mu.Unlock()
	<-wrap.held
	c.Isolate(0)
	c.Leader(0)
	if !n1.IsLeader() {
		t.Skip("n1 noticed the partition before the stale answer could arrive; nothing to check")
	}
	// A renewal reaches only n1; then the old answer arrives.
	res := make(chan error, 1)
	go func() {
		_, err := n1.Renew(harness.Context(t, 5*time.Second), "k", "h", lease.Token)
		res <- err
	}()
	harness.WaitUntil(t, 5*time.Second, "the renewal to wait for its round", func() bool {
		return cluster.VerifyRoundRunning(n1)
	})
	close(wrap.release)
	if err := <-res; err == nil {
		t.Fatal("the deposed leader acknowledged a renewal on the strength of an answer to a heartbeat sent before it")
	}
}
