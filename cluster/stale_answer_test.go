package cluster

import (
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
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
	c := newTestCluster(t, 3, false, func(cfg *Config) {
		if cfg.NodeID == "n1" {
			// Slow to notice it lost its quorum, so the stale answer
			// arrives while it still believes it leads.
			cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = 3*time.Second, 3*time.Second, 3*time.Second
			cfg.MinTTL = 6 * time.Second
			wrap = &holdAnswer{InmemTransport: cfg.Transport.(*raft.InmemTransport), held: make(chan struct{}), release: make(chan struct{})}
			cfg.Transport = wrap
		}
	})
	if li := c.leader(); li != 0 {
		if _, err := c.node(li).TransferLeadership(ctxT(t, 5*time.Second), "n1"); err != nil {
			t.Fatalf("transfer to n1: %v", err)
		}
	}
	waitFor(t, 10*time.Second, "n1 to establish", func() bool { return c.node(0).Ready() == nil })
	n1 := c.node(0)
	lease, _, err := n1.Acquire(ctxT(t, 5*time.Second), AcquireRequest{Key: "k", Holder: "h", TTL: 6 * time.Second})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	// Park one heartbeat answer from n2, then cut n1 off; n2 and n3 elect
	// a new leader, which promotes the lease.
	wrap.mu.Lock()
	wrap.peer, wrap.armed = raft.ServerAddress(c.peers[1].RaftAddr), true
	wrap.mu.Unlock()
	<-wrap.held
	c.isolate(0)
	c.leader(0)
	if !n1.IsLeader() {
		t.Skip("n1 noticed the partition before the stale answer could arrive; nothing to check")
	}
	// A renewal reaches only n1; then the old answer arrives.
	res := make(chan error, 1)
	go func() {
		_, err := n1.Renew(ctxT(t, 5*time.Second), "k", "h", lease.Token)
		res <- err
	}()
	waitFor(t, 5*time.Second, "the renewal to wait for its round", func() bool {
		n1.verify.mu.Lock()
		defer n1.verify.mu.Unlock()
		return n1.verify.running
	})
	close(wrap.release)
	if err := <-res; err == nil {
		t.Fatal("the deposed leader acknowledged a renewal on the strength of an answer to a heartbeat sent before it")
	}
}
