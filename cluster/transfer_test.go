package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// dropTimeoutNow acknowledges TimeoutNow without delivering it: the target
// crashed right after, or is too slow to campaign.
type dropTimeoutNow struct{ *raft.InmemTransport }

func (d dropTimeoutNow) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return nil
}

// A write that fails while the leader stays leader (here: during a
// leadership transfer that never completes) must not leave the leader
// unable to write or to expire leases: it establishes itself again.
func TestLeaderRecoversFromFailedTransfer(t *testing.T) {
	c := newTestCluster(t, 3, false, func(cfg *Config) {
		cfg.Transport = dropTimeoutNow{cfg.Transport.(*raft.InmemTransport)}
	})
	li := c.leader()
	leader := c.node(li)
	short, _, err := leader.Acquire(ctxT(t, 5*time.Second), AcquireRequest{Key: "short", Holder: "h", TTL: 300 * time.Millisecond})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := leader.TransferLeadership(ctxT(t, time.Second), c.peers[(li+1)%3].ID)
		done <- err
	}()
	waitFor(t, 5*time.Second, "the transfer to start", func() bool {
		return leader.raft.Stats()["state"] == "Leader" && leaderTransferring(leader)
	})
	// A write during the transfer fails; the proposer stops.
	leader.Acquire(ctxT(t, 5*time.Second), AcquireRequest{Key: "during", Holder: "h", TTL: time.Second})
	<-done
	// Whoever leads now must write and expire.
	if err := c.onLeader(10*time.Second, func(n *Node) error {
		_, _, err := n.Acquire(ctxT(t, 2*time.Second), AcquireRequest{Key: "after", Holder: "h", TTL: time.Second})
		return err
	}); err != nil {
		t.Fatalf("no write after the failed transfer: %v", err)
	}
	waitFor(t, 10*time.Second, "the short lease to expire", func() bool {
		l := c.node(c.leader()).machine.Get("short")
		return l != nil && (!l.Held || l.Token != short.Token)
	})
}

// leaderTransferring reports whether raft refuses writes for a transfer in
// progress, by probing with a barrier that must fail fast.
func leaderTransferring(n *Node) bool {
	err := n.raft.Barrier(50 * time.Millisecond).Error()
	return err == raft.ErrLeadershipTransferInProgress
}
