package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
)

// TestRevokeNeverOverlaps, against three real servers: a holder whose
// client renews every TTL/3 writes to a fenced store while it believes it
// holds the key (until SentAt of its last successful renewal + TTL), and a
// second holder waits for the key. An operator's revoke or prohibit
// refuses the holder's renewals at once (lease_lost with the reason) and
// the waiter is granted the key only after the holder's believed ownership
// ended: the store never refuses a write. With force the waiter is granted
// at once, while the old holder still believes it holds the key, and the
// fenced store refuses the old holder's write.
func TestRevokeNeverOverlaps(t *testing.T) {
	c := startCluster(t, 3)
	const ttl, margin = 3 * time.Second, 300 * time.Millisecond
	op := c.newClient(t, "operator")
	for _, tt := range []struct {
		name   string
		force  bool
		reason string
		end    func(ctx context.Context, key, holder string) ([]client.RevokedLease, error)
	}{
		{"revoke", false, client.ReasonRevoked, func(ctx context.Context, key, _ string) ([]client.RevokedLease, error) {
			ended, _, err := op.Leases().RevokeKey(ctx, key)
			return ended, err
		}},
		{"prohibit", false, client.ReasonProhibited, func(ctx context.Context, key, holder string) ([]client.RevokedLease, error) {
			ctl, err := op.Groups().SetControlWith(ctx, key, client.KeyControl{Prohibited: []string{holder}})
			if err != nil {
				return nil, err
			}
			return ctl.Ended, nil
		}},
		{"revoke force", true, client.ReasonRevoked, func(ctx context.Context, key, _ string) ([]client.RevokedLease, error) {
			ended, _, err := op.Leases().RevokeKey(ctx, key, client.WithForce())
			return ended, err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			key := "jobs/revoke-" + fmt.Sprint(tt.force) + "-" + tt.reason
			store := &frameStore{highest: map[string]uint64{}, frames: map[string]int{}}
			old, err := c.newClient(t, "old").Acquire(ctx, key, client.WithTTL(ttl), client.WithMargin(margin))
			if err != nil {
				t.Fatal(err)
			}
			// The old holder writes while it believes it holds the key.
			var (
				mu       sync.Mutex
				refused  error
				believed time.Time // SentAt of the last successful renewal + TTL
			)
			stopWriting := make(chan struct{})
			wrote := make(chan struct{})
			go func() {
				defer close(wrote)
				for frame := 1; ; frame++ {
					select {
					case <-stopWriting:
						return
					case <-old.Done():
						return
					case <-time.After(50 * time.Millisecond):
					}
					mu.Lock()
					believed = old.Deadline().Add(margin)
					mu.Unlock()
					if old.Err() != nil {
						return
					}
					if err := store.Write(key, old.Token(), frame); err != nil {
						mu.Lock()
						refused = err
						mu.Unlock()
						return
					}
				}
			}()

			type granted struct {
				l   *client.Lease
				at  time.Time
				err error
			}
			next := make(chan granted, 1)
			go func() {
				l, err := c.newClient(t, "new").Acquire(ctx, key, client.WithTTL(ttl), client.WithWait(time.Minute))
				next <- granted{l, time.Now(), err}
			}()
			c.waitForWaiters(t, 1)
			time.Sleep(ttl / 2) // the old holder renews in between

			ended, err := tt.end(ctx, key, old.Holder())
			if err != nil {
				t.Fatal(err)
			}
			if len(ended) != 1 || ended[0].Token != old.Token() || ended[0].Forced != tt.force || ended[0].Reason != tt.reason {
				t.Fatalf("ended %+v, want the old holder's lease (forced %v, reason %s)", ended, tt.force, tt.reason)
			}
			g := <-next
			if g.err != nil {
				t.Fatalf("waiter: %v", g.err)
			}
			defer g.l.Release(ctx)
			if tt.force {
				close(stopWriting)
				<-wrote
				mu.Lock()
				end := believed
				mu.Unlock()
				if !g.at.Before(end) {
					t.Errorf("forced: the waiter was granted %v after the old holder's ownership ended, want at once", g.at.Sub(end))
				}
				if err := store.Write(key, g.l.Token(), 100); err != nil {
					t.Fatalf("the new holder's write: %v", err)
				}
				if err := store.Write(key, old.Token(), 101); err == nil {
					t.Errorf("the fenced store took the old holder's write with token %d after token %d", old.Token(), g.l.Token())
				}
				return
			}
			<-wrote // the old holder stopped: refused, or past its deadline
			mu.Lock()
			end, refusedErr := believed, refused
			mu.Unlock()
			if g.at.Before(end) {
				t.Fatalf("two holders: the waiter was granted %v before the old holder's ownership ended", end.Sub(g.at))
			}
			if refusedErr != nil {
				t.Errorf("the store refused the old holder's write while it believed it held the key: %v", refusedErr)
			}
			var ae *client.APIError
			if err := old.Err(); !errors.Is(err, client.ErrLeaseLost) || !errors.As(err, &ae) || ae.Reason != tt.reason {
				t.Errorf("old holder: Err = %v, want ErrLeaseLost with reason %s", err, tt.reason)
			}
			if err := store.Write(key, g.l.Token(), 100); err != nil {
				t.Errorf("the new holder's write: %v", err)
			}
			t.Logf("%s: the waiter was granted %v after the old holder's ownership ended", tt.name, g.at.Sub(end).Round(time.Millisecond))
		})
	}
}
