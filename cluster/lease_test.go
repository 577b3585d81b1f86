package cluster

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func acquire(t *testing.T, c *testCluster, key, holder string, ttl time.Duration) LeaseView {
	t.Helper()
	var lease LeaseView
	err := c.onLeader(10*time.Second, func(n *Node) error {
		var err error
		lease, _, err = n.Acquire(ctxT(t, 5*time.Second), AcquireRequest{Key: key, Holder: holder, TTL: ttl})
		return err
	})
	if err != nil {
		t.Fatalf("acquire %s by %s: %v", key, holder, err)
	}
	return lease
}

// Guarantee: of many concurrent acquirers of one free key, exactly one wins;
// every other one is told who holds it.
func TestConcurrentAcquirersOneWins(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		t.Run(fmt.Sprintf("tcp=%v", tcp), func(t *testing.T) {
			c := newTestCluster(t, 3, tcp, nil)
			leader := c.node(c.leader())
			const n = 32
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				winners []string
				heldBy  = map[string]int{}
			)
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					holder := fmt.Sprintf("worker-%d", i)
					lease, created, err := leader.Acquire(ctxT(t, 5*time.Second), AcquireRequest{Key: "scene-01", Holder: holder, TTL: time.Minute})
					mu.Lock()
					defer mu.Unlock()
					var held *HeldError
					switch {
					case err == nil && created && lease.Holder == holder:
						winners = append(winners, holder)
					case errors.As(err, &held):
						heldBy[held.Lease.Holder]++
					default:
						t.Errorf("acquire by %s: lease %+v created %v err %v", holder, lease.Lease, created, err)
					}
				}(i)
			}
			wg.Wait()
			if len(winners) != 1 {
				t.Fatalf("winners = %v, want exactly one", winners)
			}
			if got := heldBy[winners[0]]; got != n-1 {
				t.Errorf("%d acquirers were told %s holds the key, want %d (told: %v)", got, winners[0], n-1, heldBy)
			}
		})
	}
}

// Guarantee (fencing): every acquisition takes a larger token, across keys,
// re-acquisition by the same holder after release, and leader changes.
func TestTokensStrictlyIncrease(t *testing.T) {
	c := newTestCluster(t, 3, false, nil)
	var last uint64
	check := func(l LeaseView) {
		t.Helper()
		if l.Token <= last {
			t.Fatalf("token %d on %s is not above the previous %d", l.Token, l.Key, last)
		}
		last = l.Token
	}
	for round := 0; round < 3; round++ {
		for _, key := range []string{"a", "b", "a"} {
			l := acquire(t, c, key, "h", time.Minute)
			check(l)
			if err := c.node(c.leader()).Release(ctxT(t, 5*time.Second), key, "h", l.Token); err != nil {
				t.Fatalf("release: %v", err)
			}
		}
		// Change leader and go on.
		old := c.leader()
		if _, err := c.node(old).TransferLeadership(ctxT(t, 5*time.Second), ""); err != nil {
			t.Fatalf("transfer: %v", err)
		}
		c.leader(old)
	}
}

// Guarantee (safety, bound): a holder that stops renewing loses its lease
// no earlier than TTL after it sent its last successful renewal, and, with
// no failover, the key is free soon after that.
func TestExpiryNotBeforeTTLAfterLastRenewal(t *testing.T) {
	c := newTestCluster(t, 3, false, nil)
	const ttl = 500 * time.Millisecond
	const bound = time.Second // generous for a loaded CI machine; typically a few ms
	l := acquire(t, c, "job", "w", ttl)
	n := c.node(c.leader())
	var lastSent time.Time
	for i := 0; i < 5; i++ {
		sent := time.Now()
		if _, err := n.Renew(ctxT(t, 5*time.Second), "job", "w", l.Token); err != nil {
			t.Fatalf("renew %d: %v", i, err)
		}
		lastSent = sent
		time.Sleep(ttl / 3)
	}
	var freedAt time.Time
	waitFor(t, ttl+5*time.Second, "the lease to expire", func() bool {
		got, err := n.Get(ctxT(t, 5*time.Second), "job", Stale)
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if got.Held {
			return false
		}
		freedAt = time.Now()
		if got.Reason.String() != ReasonExpired {
			t.Fatalf("reason %q, want expired", got.Reason)
		}
		return true
	})
	if early := lastSent.Add(ttl).Sub(freedAt); early > 0 {
		t.Fatalf("lease freed %v before TTL had passed since the last renewal was sent", early)
	}
	if late := freedAt.Sub(lastSent.Add(ttl)); late > bound {
		t.Fatalf("lease freed %v after its deadline, want within %v", late, bound)
	} else {
		t.Logf("freed %v after TTL since the last renewal was sent", late)
	}
	// A renewal after the deadline is refused with the reason.
	_, err := n.Renew(ctxT(t, 5*time.Second), "job", "w", l.Token)
	var lost *LostError
	if !errors.As(err, &lost) || lost.Reason != ReasonExpired {
		t.Fatalf("renew after expiry: %v, want lease lost (expired)", err)
	}
}

// Guarantee: a holder that keeps renewing keeps its lease and its token
// through a leader crash and through a leadership transfer.
func TestRenewingHolderKeepsLeaseThroughFailover(t *testing.T) {
	const ttl = time.Second
	for _, how := range []string{"crash", "transfer"} {
		t.Run(how, func(t *testing.T) {
			c := newTestCluster(t, 3, false, nil)
			l := acquire(t, c, "elections/scheduler", "sched-1", ttl)
			stop := make(chan struct{})
			errCh := make(chan error, 1)
			renewals := 0
			go func() {
				// Renew every TTL/3 on whoever leads; a lost lease is fatal,
				// unavailability is retried until the local deadline.
				deadline := time.Now().Add(ttl)
				for {
					select {
					case <-stop:
						errCh <- nil
						return
					case <-time.After(ttl / 5):
					}
					sent := time.Now()
					err := c.onLeader(time.Until(deadline), func(n *Node) error {
						_, err := n.Renew(ctxT(t, ttl), l.Key, l.Holder, l.Token)
						return err
					})
					if err != nil {
						errCh <- fmt.Errorf("renewal %d failed: %w", renewals, err)
						return
					}
					renewals++
					deadline = sent.Add(ttl)
				}
			}()
			old := c.leader()
			if how == "crash" {
				c.stop(old)
			} else if _, err := c.node(old).TransferLeadership(ctxT(t, 5*time.Second), ""); err != nil {
				t.Fatalf("transfer: %v", err)
			}
			now := c.leader(old)
			time.Sleep(3 * ttl)
			close(stop)
			if err := <-errCh; err != nil {
				t.Fatal(err)
			}
			got, err := c.node(now).Get(ctxT(t, 5*time.Second), l.Key, Linearizable)
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if !got.Held || got.Holder != l.Holder || got.Token != l.Token {
				t.Fatalf("after %s: lease %+v, want held by %s under token %d", how, got.Lease, l.Holder, l.Token)
			}
			t.Logf("%d renewals across the %s", renewals, how)
		})
	}
}

// Guarantee: a blocking acquirer gets a released key from the release
// itself: the grant is in the same log entry as the release, with no
// polling interval between them.
func TestBlockingAcquireHandoffInSameEntry(t *testing.T) {
	c := newTestCluster(t, 3, false, nil)
	n := c.node(c.leader())
	first := acquire(t, c, "scene-07", "tracker-0", time.Minute)
	type result struct {
		lease LeaseView
		err   error
	}
	got := make(chan result, 1)
	go func() {
		l, _, err := n.Acquire(ctxT(t, 30*time.Second), AcquireRequest{Key: "scene-07", Holder: "tracker-1", TTL: time.Minute, Wait: 20 * time.Second})
		got <- result{l, err}
	}()
	// The waiter is queued once its first attempt was refused.
	waitFor(t, 5*time.Second, "the waiter to queue", func() bool { return n.Waiting() == 1 })
	select {
	case r := <-got:
		t.Fatalf("waiter answered before the release: %+v %v", r.lease.Lease, r.err)
	default:
	}
	if err := n.Release(ctxT(t, 5*time.Second), "scene-07", "tracker-0", first.Token); err != nil {
		t.Fatalf("release: %v", err)
	}
	releasedAt := n.LeaseIndex()
	r := <-got
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	if r.lease.Holder != "tracker-1" || r.lease.Token <= first.Token {
		t.Fatalf("waiter got %+v, want tracker-1 with a token above %d", r.lease.Lease, first.Token)
	}
	if r.lease.ModifyIndex != releasedAt {
		t.Fatalf("grant at index %d, release at %d: want one log entry", r.lease.ModifyIndex, releasedAt)
	}
}
