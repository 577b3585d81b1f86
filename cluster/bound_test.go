package cluster_test

import (
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// Guarantee (Bound, across a failover): a lease that nobody renews frees
// no later than one TTL after the next leader established itself, plus a
// bound for a loaded machine; and, as always, never before TTL has passed
// since its acquire was sent. So a failover adds at most the election time
// and one TTL to the time a dead holder's key stays taken.
func TestUnrenewedLeaseFreesWithinTTLOfTheNextLeader(t *testing.T) {
	const ttl = time.Second
	const slack = time.Second // generous for a loaded CI machine; typically a few ms
	for _, how := range []string{"crash", "transfer"} {
		t.Run(how, func(t *testing.T) {
			c := inproc.Start(t, 3, inproc.Options{})
			sent := time.Now()
			l := acquire(t, c, "orphan", "dead-holder", ttl)
			old := c.Leader()
			depose(t, c, old, how)
			// The moment the next leader is seen established is an upper
			// bound of the moment it established (and restarted the
			// lease's deadline at a full TTL).
			var next int
			var established time.Time
			harness.WaitUntil(t, 10*time.Second, "the next leader to establish", func() bool {
				for i := 0; i < c.Len(); i++ {
					if n := c.Node(i); i != old && n != nil && n.Ready() == nil {
						next, established = i, time.Now()
						return true
					}
				}
				return false
			})
			var freedAt time.Time
			harness.WaitUntil(t, ttl+10*time.Second, "the lease to be freed", func() bool {
				got, err := c.Node(next).Get(harness.Context(t, 5*time.Second), l.Key, cluster.Stale)
				if err != nil {
					t.Fatalf("get: %v", err)
				}
				if got.Held {
					return false
				}
				freedAt = time.Now()
				if got.Token != l.Token || got.Reason.String() != wire.ReasonExpired {
					t.Fatalf("freed %+v, want token %d expired", got.Lease, l.Token)
				}
				return true
			})
			if early := sent.Add(ttl).Sub(freedAt); early > 0 {
				t.Errorf("freed %v before TTL had passed since the acquire was sent", early)
			}
			if late := freedAt.Sub(established.Add(ttl)); late > slack {
				t.Errorf("freed %v after one TTL from the next leader's establishment, want within %v", late, slack)
			}
			t.Logf("%s: next leader established %v after the acquire; freed %v after that (TTL %v)",
				how, established.Sub(sent).Round(time.Millisecond), freedAt.Sub(established).Round(time.Millisecond), ttl)
		})
	}
}
