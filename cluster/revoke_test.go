package cluster_test

import (
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
