package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// acquire acquires key for holder with ttl and the test's secret on
// whichever server leads c, failing the test if it is not granted.
func acquire(t *testing.T, c *inproc.Cluster, key, holder string, ttl time.Duration) cluster.LeaseView {
	t.Helper()
	var lease cluster.LeaseView
	err := c.OnLeader(10*time.Second, func(n *cluster.Node) error {
		var err error
		lease, _, err = n.Acquire(harness.Context(t, 5*time.Second), cluster.AcquireRequest{Secret: testSecret, Key: key, Holder: holder, TTL: ttl})
		return err
	})
	if err != nil {
		t.Fatalf("acquire %s by %s: %v", key, holder, err)
	}
	return lease
}

// leaderAcquires acquires key for holder h with ttl on whichever server
// leads c, trying for within, each try given try; it returns the error of
// the last try.
func leaderAcquires(t *testing.T, c *inproc.Cluster, within, try time.Duration, key string, ttl time.Duration) error {
	t.Helper()
	return c.OnLeader(within, func(n *cluster.Node) error {
		_, _, err := n.Acquire(harness.Context(t, try), cluster.AcquireRequest{Secret: testSecret, Key: key, Holder: "h", TTL: ttl})
		return err
	})
}

// depose ends the leadership of server old of c: how "crash" stops it,
// any other how ("transfer") has it transfer leadership away.
func depose(t *testing.T, c *inproc.Cluster, old int, how string) {
	t.Helper()
	if how == "crash" {
		c.Stop(old)
	} else if _, err := c.Node(old).TransferLeadership(harness.Context(t, 5*time.Second), ""); err != nil {
		t.Fatalf("transfer: %v", err)
	}
}

// acquireOn acquires key for holder with ttl and the test's secret on n,
// failing the test if it is not granted.
func acquireOn(t *testing.T, ctx context.Context, n *cluster.Node, key, holder string, ttl time.Duration) cluster.LeaseView {
	t.Helper()
	lease, _, err := n.Acquire(ctx, cluster.AcquireRequest{Secret: testSecret, Key: key, Holder: holder, TTL: ttl})
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
			c := inproc.Start(t, 3, inproc.Options{TCP: tcp})
			leader := c.Node(c.Leader())
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
					lease, created, err := leader.Acquire(harness.Context(t, 5*time.Second), cluster.AcquireRequest{Secret: testSecret, Key: "scene-01", Holder: holder, TTL: time.Minute})
					mu.Lock()
					defer mu.Unlock()
					var held *cluster.HeldError
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
	c := inproc.Start(t, 3, inproc.Options{})
	var last uint64
	check := func(l cluster.LeaseView) {
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
			if _, err := c.Node(c.Leader()).Release(harness.Context(t, 5*time.Second), key, "h", testSecret, l.Token); err != nil {
				t.Fatalf("release: %v", err)
			}
		}
		// Change leader and go on.
		old := c.Leader()
		if _, err := c.Node(old).TransferLeadership(harness.Context(t, 5*time.Second), ""); err != nil {
			t.Fatalf("transfer: %v", err)
		}
		c.Leader(old)
	}
}

// Guarantee (safety, bound): a holder that stops renewing loses its lease
// no earlier than TTL after it sent its last successful renewal, and, with
// no failover, the key is free soon after that.
func TestExpiryNotBeforeTTLAfterLastRenewal(t *testing.T) {
	c := inproc.Start(t, 3, inproc.Options{})
	const ttl = 500 * time.Millisecond
	const bound = time.Second // generous for a loaded CI machine; typically a few ms
	l := acquire(t, c, "job", "w", ttl)
	n := c.Node(c.Leader())
	var lastSent time.Time
	for i := 0; i < 5; i++ {
		sent := time.Now()
		if _, err := n.Renew(harness.Context(t, 5*time.Second), "job", "w", testSecret, l.Token); err != nil {
			t.Fatalf("renew %d: %v", i, err)
		}
		lastSent = sent
		time.Sleep(ttl / 3)
	}
	var freedAt time.Time
	harness.WaitUntil(t, ttl+5*time.Second, "the lease to expire", func() bool {
		got, err := n.Get(harness.Context(t, 5*time.Second), "job", cluster.Stale)
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if got.Held {
			return false
		}
		freedAt = time.Now()
		if got.Reason.String() != wire.ReasonExpired {
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
	_, err := n.Renew(harness.Context(t, 5*time.Second), "job", "w", testSecret, l.Token)
	var lost *cluster.LostError
	if !errors.As(err, &lost) || lost.Reason != wire.ReasonExpired {
		t.Fatalf("renew after expiry: %v, want lease lost (expired)", err)
	}
}

// Guarantee: a holder that keeps renewing keeps its lease and its token
// through a leader crash and through a leadership transfer.
func TestRenewingHolderKeepsLeaseThroughFailover(t *testing.T) {
	const ttl = time.Second
	for _, how := range []string{"crash", "transfer"} {
		t.Run(how, func(t *testing.T) {
			c := inproc.Start(t, 3, inproc.Options{})
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
					err := c.OnLeader(time.Until(deadline), func(n *cluster.Node) error {
						_, err := n.Renew(harness.Context(t, ttl), l.Key, l.Holder, testSecret, l.Token)
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
			old := c.Leader()
			depose(t, c, old, how)
			now := c.Leader(old)
			time.Sleep(3 * ttl)
			close(stop)
			if err := <-errCh; err != nil {
				t.Fatal(err)
			}
			got, err := c.Node(now).Get(harness.Context(t, 5*time.Second), l.Key, cluster.Linearizable)
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
	c := inproc.Start(t, 3, inproc.Options{})
	n := c.Node(c.Leader())
	first := acquire(t, c, "scene-07", "tracker-0", time.Minute)
	type result struct {
		lease cluster.LeaseView
		err   error
	}
	got := make(chan result, 1)
	go func() {
		l, _, err := n.Acquire(harness.Context(t, 30*time.Second), cluster.AcquireRequest{Secret: testSecret, Key: "scene-07", Holder: "tracker-1", TTL: time.Minute, Wait: 20 * time.Second})
		got <- result{l, err}
	}()
	// The waiter is queued once its first attempt was refused.
	harness.WaitUntil(t, 5*time.Second, "the waiter to queue", func() bool { return n.Waiting() == 1 })
	select {
	case r := <-got:
		t.Fatalf("waiter answered before the release: %+v %v", r.lease.Lease, r.err)
	default:
	}
	if _, err := n.Release(harness.Context(t, 5*time.Second), "scene-07", "tracker-0", testSecret, first.Token); err != nil {
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

// Guarantee: knowing a lease's holder and token is not enough to act on
// it. Without its secret an acquisition under the holder's name is held
// off (the same lease is not handed back), and a renewal or a release is
// refused; the lease is left as it was.
func TestLeaseSecretIsNeededToActAsHolder(t *testing.T) {
	c := inproc.Start(t, 1, inproc.Options{})
	ctx := harness.Context(t, 20*time.Second)
	l := acquire(t, c, "k", "h1", time.Minute)
	n := c.Node(c.Leader())
	const other = "0123456789abcdef0123456789abcdef"

	_, _, err := n.Acquire(ctx, cluster.AcquireRequest{Key: "k", Holder: "h1", TTL: time.Minute, Secret: other,
		Metadata: map[string]string{"addr": "evil:1"}})
	var held *cluster.HeldError
	if !errors.As(err, &held) || !held.WrongSecret || !errors.Is(err, cluster.ErrHeld) {
		t.Fatalf("acquire under h1's name with another secret = %v, want held (wrong secret)", err)
	}
	if _, err := n.Renew(ctx, "k", "h1", other, l.Token); !errors.Is(err, cluster.ErrWrongSecret) {
		t.Fatalf("renewal with another secret = %v, want %v", err, cluster.ErrWrongSecret)
	}
	if _, err := n.Release(ctx, "k", "h1", other, l.Token); !errors.Is(err, cluster.ErrWrongSecret) {
		t.Fatalf("release with another secret = %v, want %v", err, cluster.ErrWrongSecret)
	}
	if _, err := n.Renew(ctx, "k", "h1", "", l.Token); !errors.Is(err, cluster.ErrInvalid) {
		t.Fatalf("renewal without a secret = %v, want %v", err, cluster.ErrInvalid)
	}
	got, err := n.Get(ctx, "k", cluster.Linearizable)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Held || got.Token != l.Token || got.Metadata != nil || got.ModifyIndex != l.ModifyIndex {
		t.Fatalf("lease after the refusals = %+v, want it unchanged", *got.Lease)
	}

	// The acquirer, with its secret, retries and keeps its token.
	again, created, err := n.Acquire(ctx, cluster.AcquireRequest{Key: "k", Holder: "h1", TTL: time.Minute, Secret: testSecret})
	if err != nil || created || again.Token != l.Token {
		t.Fatalf("retry with the secret = token %d created %v err %v, want token %d kept", again.Token, created, err, l.Token)
	}
	if _, err := n.Renew(ctx, "k", "h1", testSecret, l.Token); err != nil {
		t.Fatalf("renewal with the secret: %v", err)
	}
	if freed, err := n.Release(ctx, "k", "h1", testSecret, l.Token); err != nil || !freed {
		t.Fatalf("release with the secret = %v, %v; want freed", freed, err)
	}
}

// A lease acquired before servers kept secrets (an Acquire of payload
// version 1, without a hash, as an older leader wrote it) cannot be
// renewed, released or taken back by its holder's name after the
// upgrade: it can only end at its deadline, or by an operator.
func TestLeaseWithoutSecretCannotBeActedOn(t *testing.T) {
	c := inproc.Start(t, 1, inproc.Options{})
	ctx := harness.Context(t, 20*time.Second)
	n := c.Node(c.Leader())
	old := fsm.Encode(fsm.Acquire{Key: "old", Holder: "h", TTL: time.Minute, Time: time.Now().UnixNano()})
	if err := cluster.RaftOf(n).Apply(old, 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	l := cluster.MachineOf(n).Get("old")
	if l == nil || !l.Held || l.SecretHash != "" {
		t.Fatalf("the old-format acquisition left %+v, want a held lease without a secret hash", l)
	}
	if _, err := n.Renew(ctx, "old", "h", testSecret, l.Token); !errors.Is(err, cluster.ErrWrongSecret) {
		t.Errorf("renewal of a lease without a secret = %v, want %v", err, cluster.ErrWrongSecret)
	}
	if _, err := n.Release(ctx, "old", "h", testSecret, l.Token); !errors.Is(err, cluster.ErrWrongSecret) {
		t.Errorf("release of a lease without a secret = %v, want %v", err, cluster.ErrWrongSecret)
	}
	_, _, err := n.Acquire(ctx, cluster.AcquireRequest{Key: "old", Holder: "h", TTL: time.Minute, Secret: testSecret})
	if !errors.Is(err, cluster.ErrHeld) {
		t.Errorf("acquire by its holder's name = %v, want %v", err, cluster.ErrHeld)
	}
	if got := cluster.MachineOf(n).Get("old"); !got.Held || got.Token != l.Token || got.ModifyIndex != l.ModifyIndex {
		t.Errorf("the lease after the refusals = %+v, want it unchanged", got)
	}
	// An operator still ends it.
	if _, err := n.Revoke(ctx, "old", true); err != nil {
		t.Fatalf("forced revoke: %v", err)
	}
	if got := cluster.MachineOf(n).Get("old"); got.Held {
		t.Errorf("the lease is still held after a forced revoke")
	}
}
