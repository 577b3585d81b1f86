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
