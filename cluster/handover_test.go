package cluster_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// dropTimeoutNow acknowledges TimeoutNow without delivering it, after
// delay: the target crashed right after, or is too slow to campaign. With
// a delay (half a second), raft's transfer fails at its election timeout,
// but raft goes on refusing entries until the RPC returns, as it does with
// a target that does not answer over TCP.
type dropTimeoutNow struct {
	*raft.InmemTransport
	delay time.Duration
}

func (d dropTimeoutNow) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	time.Sleep(d.delay)
	return nil
}

// shiftedClock is the real monotonic clock plus an offset that a test
// moves forward, shared by every node: leases age without the test
// waiting for them.
type shiftedClock struct {
	cluster.SystemClock
	mu     sync.Mutex
	offset time.Duration
}

func (c *shiftedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *shiftedClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// expiresIn reads key's time left on the current leader.
func expiresIn(t *testing.T, c *inproc.Cluster, key string) time.Duration {
	t.Helper()
	var left time.Duration
	if err := c.OnLeader(10*time.Second, func(n *cluster.Node) error {
		v, err := n.Get(harness.Context(t, 2*time.Second), key, cluster.Linearizable)
		left = v.ExpiresIn
		return err
	}); err != nil {
		t.Fatalf("read %s on the leader: %v", key, err)
	}
	return left
}

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
		cfg.Transport = dropTimeoutNow{InmemTransport: cfg.Transport.(*raft.InmemTransport)}
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
	if err := leaderAcquires(t, c, 10*time.Second, 2*time.Second, "after", time.Second); err != nil {
		t.Fatalf("no write after the failed hand-over: %v", err)
	}
}

// TestHandoverCarriesLeaseTimesToTheNextLeader: after a graceful hand-over
// the next leader starts each lease with the time it had left (plus the
// tenth that covers the clocks' rate difference), not a full TTL; a lease
// its holder renewed just before the hand-over keeps that renewal. A
// leader elected after that one, by a crash, restarts leases at a full
// TTL again: the hand-over's times no longer hold once a leader served.
func TestHandoverCarriesLeaseTimesToTheNextLeader(t *testing.T) {
	clock := &shiftedClock{}
	c := inproc.Start(t, 3, inproc.Options{Tweak: func(cfg *cluster.Config) { cfg.Clock = clock }})
	li := c.Leader()
	ctx := harness.Context(t, 10*time.Second)
	const ttl = 10 * time.Second
	old := acquireOn(t, ctx, c.Node(li), "aged", "h", ttl)
	renewedLast := acquireOn(t, ctx, c.Node(li), "renewed", "h", ttl)
	clock.Advance(6 * time.Second)
	if _, err := c.Node(li).Renew(ctx, "renewed", "h", testSecret, renewedLast.Token); err != nil {
		t.Fatalf("renew: %v", err)
	}

	frozeBy := time.Now() // the hand-over reads its times after this
	id, err := c.Node(li).Handover(harness.Context(t, 5*time.Second))
	if err != nil || id == "" {
		t.Fatalf("Handover = %q, %v; want a new leader", id, err)
	}
	next := c.Leader(li)
	if c.Peer(next).ID != id {
		t.Fatalf("leader is %s, Handover named %s", c.Peer(next).ID, id)
	}
	// 4 s left when handed over: 4.4 s on the new leader, less the time
	// the hand-over took; never less than what the old deadline had left.
	left := expiresIn(t, c, "aged")
	if least := 4*time.Second - time.Since(frozeBy); left < least || left > 4400*time.Millisecond {
		t.Errorf("aged lease (token %d) has %v left on the new leader, want at most 4.4s (4s left at the hand-over plus a tenth, not a full %v) and at least the old deadline's %v", old.Token, left, ttl, least)
	}
	// Renewed just before: its 10 s plus a tenth, not cut to the TTL.
	if left := expiresIn(t, c, "renewed"); left <= ttl || left > ttl+ttl/10 {
		t.Errorf("lease renewed before the hand-over has %v left, want its renewal's 10s plus a tenth", left)
	}

	// The new leader crashes; the one elected next never saw a hand-over
	// that still holds: a full TTL.
	c.Stop(next)
	third := c.Leader(next)
	if left := expiresIn(t, c, "aged"); left < 9*time.Second {
		t.Errorf("after a crash of the leader that took over, %s restarted the lease with %v left, want a full %v", c.Peer(third).ID, left, ttl)
	}
}

// TestFailedHandoverVoidsTheLeaseTimes: when the transfer fails, the
// leader commits a LeaderEstablished after its Handover before it renews
// again, so that a leader elected later restarts leases at a full TTL: the
// renewals served after the failed hand-over are not in the Handover.
func TestFailedHandoverVoidsTheLeaseTimes(t *testing.T) {
	clock := &shiftedClock{}
	c := inproc.Start(t, 3, inproc.Options{Tweak: func(cfg *cluster.Config) {
		cfg.Clock = clock
		cfg.Transport = dropTimeoutNow{InmemTransport: cfg.Transport.(*raft.InmemTransport), delay: 500 * time.Millisecond}
	}})
	li := c.Leader()
	ctx := harness.Context(t, 10*time.Second)
	// A long TTL, so that the lease outlives this test's slowest hand-over
	// and elections on a loaded machine: the hand-over holds 10 s.
	const ttl = 30 * time.Second
	l := acquireOn(t, ctx, c.Node(li), "a", "h", ttl)
	clock.Advance(20 * time.Second)
	if _, err := c.Node(li).Handover(harness.Context(t, time.Second)); err == nil {
		t.Fatal("Handover succeeded although the target never campaigned")
	}
	// The old leader serves again, and its holder renews: 30 s from here.
	if err := c.OnLeader(10*time.Second, func(n *cluster.Node) error {
		_, err := n.Renew(harness.Context(t, 2*time.Second), "a", "h", testSecret, l.Token)
		return err
	}); err != nil {
		t.Fatalf("renew after the failed hand-over: %v", err)
	}
	clock.Advance(3 * time.Second) // 27 s left on the leader that renewed
	renewed := c.Leader()
	c.Stop(renewed)
	c.Leader(renewed)
	if left := expiresIn(t, c, "a"); left < ttl-5*time.Second {
		t.Errorf("the next leader gave the lease %v, want a full %v: the failed hand-over's 10s was used after a renewal overtook it", left, ttl)
	}
}

// A write that fails while the leader stays leader (here: during a
// leadership transfer that never completes) must not leave the leader
// unable to write or to expire leases: it establishes itself again.
func TestLeaderRecoversFromFailedTransfer(t *testing.T) {
	c := inproc.Start(t, 3, inproc.Options{Tweak: func(cfg *cluster.Config) {
		cfg.Transport = dropTimeoutNow{InmemTransport: cfg.Transport.(*raft.InmemTransport)}
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
	if err := leaderAcquires(t, c, 10*time.Second, 2*time.Second, "after", time.Second); err != nil {
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
