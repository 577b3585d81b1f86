package cluster_test

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
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

// Guarantee: a leader cut off from its peers never acknowledges a renewal, a
// linearizable read or an acquisition once it is cut off (and so none after
// a new leader exists), and the expiry it may decide for a lease the new
// leader is renewing never takes effect.
func TestDeposedLeaderNeverAcknowledges(t *testing.T) {
	const ttl = 400 * time.Millisecond
	c := inproc.Start(t, 3, inproc.Options{})
	l := acquire(t, c, "partitions/17", "worker-a", ttl)
	old := c.Leader()
	oldNode := c.Node(old)

	c.Isolate(old)
	var (
		stop  atomic.Bool
		wg    sync.WaitGroup
		mu    sync.Mutex
		acked []string
	)
	hammer := func(name string, op func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if err := op(); err == nil {
					mu.Lock()
					acked = append(acked, name)
					mu.Unlock()
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	hammer("renew", func() error {
		_, err := oldNode.Renew(harness.Context(t, ttl), l.Key, l.Holder, testSecret, l.Token)
		return err
	})
	hammer("read", func() error {
		_, err := oldNode.Get(harness.Context(t, ttl), l.Key, cluster.Linearizable)
		return err
	})
	hammer("acquire", func() error {
		_, _, err := oldNode.Acquire(harness.Context(t, ttl), cluster.AcquireRequest{Secret: testSecret, Key: "other", Holder: "x", TTL: ttl})
		return err
	})

	// The majority elects a new leader; the holder renews there from now
	// to the end of the test.
	now := c.Leader(old)
	renewErr := make(chan error, 1)
	stopRenew := make(chan struct{})
	go func() {
		for {
			if _, err := c.Node(now).Renew(harness.Context(t, ttl), l.Key, l.Holder, testSecret, l.Token); err != nil {
				renewErr <- err
				return
			}
			select {
			case <-stopRenew:
				renewErr <- nil
				return
			case <-time.After(ttl / 4):
			}
		}
	}()
	time.Sleep(4 * ttl)
	stop.Store(true)
	wg.Wait()
	if len(acked) > 0 {
		t.Fatalf("the cut-off leader acknowledged %v", acked)
	}

	// Heal: whatever the old leader proposed while cut off is discarded.
	c.Heal(old)
	harness.WaitUntil(t, 5*time.Second, "the old leader to catch up", func() bool {
		a, _, _ := cluster.MachineOf(c.Node(old)).Indexes()
		b, _, _ := cluster.MachineOf(c.Node(now)).Indexes()
		return a == b
	})
	time.Sleep(2 * ttl)
	close(stopRenew)
	if err := <-renewErr; err != nil {
		t.Fatalf("renew on the new leader: %v", err)
	}
	for j := 0; j < 3; j++ {
		got := cluster.MachineOf(c.Node(j)).Get(l.Key)
		if !got.Held || got.Token != l.Token {
			t.Fatalf("node %d after heal: %+v, want held under token %d", j, got, l.Token)
		}
	}
	if _, err := oldNode.Renew(harness.Context(t, ttl), l.Key, l.Holder, testSecret, l.Token); !errors.Is(err, cluster.ErrNotLeader) {
		t.Fatalf("renew on the old leader after heal: %v, want ErrNotLeader", err)
	}
}

// holdAnswer parks, once armed, one answer from a peer on the leader's
// confirmation channel before the leader reads it: a slow link, or a leader
// paused by GC, SIGSTOP or a VM freeze.
type holdAnswer struct {
	mu      sync.Mutex
	peer    raft.ServerAddress
	armed   bool
	held    chan struct{}
	release chan struct{}
}

type holdConn struct {
	net.Conn
	h *holdAnswer
}

func (h *holdAnswer) wrap(dial func(raft.ServerAddress, time.Duration) (net.Conn, error)) func(raft.ServerAddress, time.Duration) (net.Conn, error) {
	return func(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
		conn, err := dial(addr, timeout)
		if err != nil || addr != h.peer {
			return conn, err
		}
		return holdConn{Conn: conn, h: h}, nil
	}
}

func (c holdConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.h.mu.Lock()
	hold := c.h.armed && n > 0
	if hold {
		c.h.armed = false
	}
	c.h.mu.Unlock()
	if hold {
		close(c.h.held)
		<-c.h.release
	}
	return n, err
}

// Guarantee (safety): a leader that was deposed while a voter's yes to an
// older leadership round was still on its way must not take that answer as
// proof of leadership for a renewal that arrived later. Otherwise the new
// leader, which promoted the lease before that renewal, frees it before TTL
// has passed since the renewal was sent. (raft.VerifyLeader counts any
// heartbeat answer that arrives after the check began; a build that counts
// answers of older rounds, tenure_unsafe_rounds, fails this test.)
func TestDeposedLeaderIgnoresAnswersToOlderHeartbeats(t *testing.T) {
	h := &holdAnswer{peer: "n2", held: make(chan struct{}), release: make(chan struct{})}
	c := inproc.Start(t, 3, inproc.Options{Tweak: func(cfg *cluster.Config) {
		if cfg.NodeID == "n1" {
			// Slow to notice it lost its quorum, so the stale answer
			// arrives while it still believes it leads.
			cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = 3*time.Second, 3*time.Second, 3*time.Second
			cfg.MinTTL = 6 * time.Second
			cfg.ConfirmDial = h.wrap(cfg.ConfirmDial)
		}
	}})
	if li := c.Leader(); li != 0 {
		if _, err := c.Node(li).TransferLeadership(harness.Context(t, 5*time.Second), "n1"); err != nil {
			t.Fatalf("transfer to n1: %v", err)
		}
	}
	harness.WaitUntil(t, 10*time.Second, "n1 to establish", func() bool { return c.Node(0).Ready() == nil })
	n1 := c.Node(0)
	lease := acquireOn(t, harness.Context(t, 5*time.Second), n1, "k", "h", 6*time.Second)
	// Park n2's yes to one round (the round still ends, on n3's yes),
	// then cut n1 off; n2 and n3 elect a new leader, which promotes the
	// lease.
	h.mu.Lock()
	h.armed = true
	h.mu.Unlock()
	if _, err := n1.Renew(harness.Context(t, 5*time.Second), "k", "h", testSecret, lease.Token); err != nil {
		t.Fatalf("renew before the partition: %v", err)
	}
	<-h.held
	c.Isolate(0)
	c.Leader(0)
	if !n1.IsLeader() {
		t.Skip("n1 noticed the partition before the stale answer could arrive; nothing to check")
	}
	// A renewal reaches only n1; then the old answer arrives.
	res := make(chan error, 1)
	go func() {
		_, err := n1.Renew(harness.Context(t, 5*time.Second), "k", "h", testSecret, lease.Token)
		res <- err
	}()
	const stale = "the deposed leader acknowledged a renewal on the strength of an answer to a round that started before it"
	harness.WaitUntil(t, 5*time.Second, "the renewal to wait for its round", func() bool {
		select {
		case err := <-res:
			if err == nil {
				t.Fatal(stale)
			}
			t.Fatalf("the renewal failed before the stale answer arrived: %v", err)
		default:
		}
		return cluster.VerifyRoundRunning(n1)
	})
	close(h.release)
	if err := <-res; err == nil {
		t.Fatal(stale)
	}
}
