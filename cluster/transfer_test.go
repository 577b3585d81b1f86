package cluster_test

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
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
	c := inproc.Start(t, 3, inproc.Options{Tweak: func(cfg *cluster.Config) {
		cfg.Transport = dropTimeoutNow{cfg.Transport.(*raft.InmemTransport)}
	}})
	li := c.Leader()
	leader := c.Node(li)
	short := acquireOn(t, harness.Context(t, 5*time.Second), leader, "short", "h", 300*time.Millisecond)
	done := make(chan error, 1)
	go func() {
		_, err := leader.TransferLeadership(harness.Context(t, time.Second), c.Peer((li+1)%3).ID)
		done <- err
	}()
	harness.WaitUntil(t, 5*time.Second, "the transfer to start", func() bool {
		return cluster.RaftOf(leader).Stats()["state"] == "Leader" && leaderTransferring(leader)
	})
	// A write during the transfer fails; the proposer stops.
	leader.Acquire(harness.Context(t, 5*time.Second), cluster.AcquireRequest{Secret: testSecret, Key: "during", Holder: "h", TTL: time.Second})
	<-done
	// Whoever leads now must write and expire.
	if err := c.OnLeader(10*time.Second, func(n *cluster.Node) error {
		_, _, err := n.Acquire(harness.Context(t, 2*time.Second), cluster.AcquireRequest{Secret: testSecret, Key: "after", Holder: "h", TTL: time.Second})
		return err
	}); err != nil {
		t.Fatalf("no write after the failed transfer: %v", err)
	}
	harness.WaitUntil(t, 10*time.Second, "the short lease to expire", func() bool {
		l := cluster.MachineOf(c.Node(c.Leader())).Get("short")
		return l != nil && (!l.Held || l.Token != short.Token)
	})
}

// leaderTransferring reports whether raft refuses writes for a transfer in
// progress, by probing with a barrier that must fail fast.
func leaderTransferring(n *cluster.Node) bool {
	err := cluster.RaftOf(n).Barrier(50 * time.Millisecond).Error()
	return err == raft.ErrLeadershipTransferInProgress
}
