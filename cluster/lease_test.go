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

// fencedStore keeps the highest token written per key and refuses lower
// ones, as a store that consumes lease holders' writes must.
type fencedStore struct {
	mu      sync.Mutex
	highest map[string]uint64
}

func (s *fencedStore) write(key string, token uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest[key] {
		return fmt.Errorf("token %d below %d", token, s.highest[key])
	}
	s.highest[key] = token
	return nil
}

// renewingHolder renews its lease every TTL/3 on whoever leads, and
// believes it holds the lease until the send time of its last successful
// renewal plus TTL (or until a renewal is refused). It writes to the store
// while it believes so.
type renewingHolder struct {
	mu         sync.Mutex
	believed   time.Time // end of the believed ownership
	lost       error     // the refusal, once refused
	refusedAt  time.Time
	writeError error // a write the store refused
}

func holdAndRenew(t *testing.T, c *inproc.Cluster, l cluster.LeaseView, store *fencedStore, stop <-chan struct{}) *renewingHolder {
	h := &renewingHolder{believed: time.Now().Add(l.TTL)}
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(l.TTL / 3):
			}
			sent := time.Now()
			err := c.OnLeader(time.Until(h.until()), func(n *cluster.Node) error {
				_, err := n.Renew(harness.Context(t, l.TTL), l.Key, l.Holder, testSecret, l.Token)
				return err
			})
			h.mu.Lock()
			switch {
			case err == nil:
				h.believed = sent.Add(l.TTL)
			case errors.Is(err, cluster.ErrLeaseLost):
				h.lost, h.refusedAt = err, time.Now()
			}
			believes := h.lost == nil && time.Now().Before(h.believed)
			h.mu.Unlock()
			if !believes {
				return
			}
			if err := store.write(l.Key, l.Token); err != nil {
				h.mu.Lock()
				h.writeError = err
				h.mu.Unlock()
				return
			}
		}
	}()
	return h
}

func (h *renewingHolder) until() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.believed
}

// Guarantee: revoke, disable and prohibit never produce two holders. A
// holder that renews every TTL/3 is refused from the operator's call on
// (lease_lost with the reason), and a blocking waiter is granted the key
// only once the holder's believed ownership (last successful renewal's
// send time + TTL) is over. With force the waiter gets the key at once,
// and only the fenced store keeps the old holder out.
func TestOperatorEndNeverOverlaps(t *testing.T) {
	const ttl = 900 * time.Millisecond
	type end func(n *cluster.Node, l cluster.LeaseView, force bool) ([]cluster.EndedLease, error)
	ends := []struct {
		name   string
		reason string
		end    end
	}{
		{"revoke", wire.ReasonRevoked, func(n *cluster.Node, l cluster.LeaseView, force bool) ([]cluster.EndedLease, error) {
			return n.Revoke(harness.Context(t, 5*time.Second), l.Key, force)
		}},
		{"revoke by holder", wire.ReasonRevoked, func(n *cluster.Node, l cluster.LeaseView, force bool) ([]cluster.EndedLease, error) {
			return n.RevokeHolder(harness.Context(t, 5*time.Second), l.Holder, force)
		}},
		// Disabled, then enabled again at once (so that the waiter may
		// have the key): the lease stays ending.
		{"disable", wire.ReasonDisabled, func(n *cluster.Node, l cluster.LeaseView, force bool) ([]cluster.EndedLease, error) {
			ended, err := n.SetKeyControl(harness.Context(t, 5*time.Second), l.Key, fsm.KeyControl{Disabled: true}, force)
			if err != nil || force {
				return ended, err
			}
			_, err = n.SetKeyControl(harness.Context(t, 5*time.Second), l.Key, fsm.KeyControl{}, false)
			return ended, err
		}},
		{"prohibit", wire.ReasonProhibited, func(n *cluster.Node, l cluster.LeaseView, force bool) ([]cluster.EndedLease, error) {
			return n.SetKeyControl(harness.Context(t, 5*time.Second), l.Key, fsm.KeyControl{Prohibited: []string{l.Holder}}, force)
		}},
	}
	c := inproc.Start(t, 3, inproc.Options{})
	for i, tt := range ends {
		for _, force := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s force=%v", tt.name, force), func(t *testing.T) {
				key := fmt.Sprintf("jobs/%d-%v", i, force)
				store := &fencedStore{highest: map[string]uint64{}}
				l := acquire(t, c, key, "old", ttl)
				stop := make(chan struct{})
				defer close(stop)
				h := holdAndRenew(t, c, l, store, stop)

				// The waiter queues behind the holder.
				type grant struct {
					lease cluster.LeaseView
					at    time.Time
					err   error
				}
				granted := make(chan grant, 1)
				go func() {
					var g grant
					g.err = c.OnLeader(5*time.Second, func(n *cluster.Node) error {
						var err error
						g.lease, _, err = n.Acquire(harness.Context(t, 20*time.Second),
							cluster.AcquireRequest{Secret: testSecret, Key: key, Holder: "new", TTL: ttl, Wait: 15 * time.Second})
						return err
					})
					g.at = time.Now()
					granted <- g
				}()
				harness.WaitUntil(t, 5*time.Second, "the waiter to queue", func() bool { return c.Node(c.Leader()).Waiting() == 1 })
				time.Sleep(ttl / 2) // let the holder renew in between

				var ended []cluster.EndedLease
				err := c.OnLeader(5*time.Second, func(n *cluster.Node) error {
					var err error
					ended, err = tt.end(n, l, force)
					return err
				})
				if err != nil {
					t.Fatalf("%s: %v", tt.name, err)
				}
				if len(ended) != 1 || ended[0].Key != key || ended[0].Token != l.Token || ended[0].Forced != force || ended[0].Reason != tt.reason {
					t.Fatalf("%s ended %+v, want %s's lease (forced %v, reason %s)", tt.name, ended, key, force, tt.reason)
				}
				if !force && (ended[0].FreesIn <= 0 || ended[0].FreesIn > ttl) {
					t.Errorf("frees_in = %v, want within (0, %v]", ended[0].FreesIn, ttl)
				}

				g := <-granted
				if force && tt.name == "disable" {
					// A disabled key goes to nobody: the waiter is told at
					// once, and the key is free.
					if !errors.Is(g.err, cluster.ErrDisabled) || !g.at.Before(h.until()) {
						t.Fatalf("waiter of a key disabled by force: %v at %v, want disabled at once", g.err, g.at)
					}
					return
				}
				if g.err != nil {
					t.Fatalf("waiter: %v", g.err)
				}
				believed := h.until()
				if force {
					if !g.at.Before(believed) {
						t.Fatalf("forced: the waiter was granted at %v, after the holder's ownership ended (%v): want at once",
							g.at.Format(time.StampMicro), believed.Format(time.StampMicro))
					}
					if err := store.write(key, g.lease.Token); err != nil {
						t.Fatalf("the new holder's write: %v", err)
					}
					if err := store.write(key, l.Token); err == nil {
						t.Fatalf("the fenced store took the old holder's write with token %d after the new holder's %d", l.Token, g.lease.Token)
					}
					return
				}
				if g.at.Before(believed) {
					t.Fatalf("two holders: the waiter was granted at %v while the old holder believed it held the key until %v",
						g.at.Format(time.StampMicro), believed.Format(time.StampMicro))
				}
				h.mu.Lock()
				lost, writeErr := h.lost, h.writeError
				h.mu.Unlock()
				var le *cluster.LostError
				if !errors.As(lost, &le) || le.Reason != tt.reason {
					t.Errorf("the holder's renewal was refused with %v, want lease_lost %s", lost, tt.reason)
				}
				if writeErr != nil {
					t.Errorf("the store refused a write of the old holder while it believed it held the key: %v", writeErr)
				}
				if err := store.write(key, g.lease.Token); err != nil {
					t.Errorf("the new holder's write: %v", err)
				}
				t.Logf("%s: granted %v after the holder's ownership ended", tt.name, g.at.Sub(believed).Round(time.Millisecond))
			})
		}
	}
}

// Guarantee: a revoke survives a leader failover. The new leader still
// refuses the holder's renewals, and frees the key no earlier than a full
// TTL after the old leader went away (as for any lease), with the reason
// revoked.
func TestRevokeSurvivesFailover(t *testing.T) {
	const ttl = time.Second
	for _, how := range []string{"crash", "transfer"} {
		t.Run(how, func(t *testing.T) {
			c := inproc.Start(t, 3, inproc.Options{})
			l := acquire(t, c, "jobs/failover", "old", ttl)
			old := c.Leader()
			ended, err := c.Node(old).Revoke(harness.Context(t, 5*time.Second), l.Key, false)
			if err != nil || len(ended) != 1 || ended[0].Forced {
				t.Fatalf("revoke: %+v %v", ended, err)
			}
			gone := time.Now()
			depose(t, c, old, how)
			now := c.Leader(old)
			harness.WaitUntil(t, 5*time.Second, "the new leader to be ready", func() bool { return c.Node(now).Ready() == nil })
			_, err = c.Node(now).Renew(harness.Context(t, 5*time.Second), l.Key, l.Holder, testSecret, l.Token)
			var lost *cluster.LostError
			if !errors.As(err, &lost) || lost.Reason != wire.ReasonRevoked {
				t.Fatalf("renewal on the new leader: %v, want lease_lost revoked", err)
			}
			var freed time.Time
			harness.WaitUntil(t, 5*ttl, "the key to free", func() bool {
				got, err := c.Node(now).Get(harness.Context(t, time.Second), l.Key, cluster.Stale)
				if err == nil && !got.Held {
					freed = time.Now()
					if got.Reason != fsm.ReasonRevoked {
						t.Errorf("free reason %v, want revoked", got.Reason)
					}
					return true
				}
				return false
			})
			if freed.Sub(gone) < ttl {
				t.Fatalf("the key freed %v after the old leader went away, before a full TTL (%v)", freed.Sub(gone), ttl)
			}
		})
	}
}
