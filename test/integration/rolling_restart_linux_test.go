package integration

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// A rolling restart of all three servers, one at a time with SIGTERM and
// waiting for /readyz before the next (followers first, the leader last,
// as docs/production.md says), loses no lease and no renewal of a holder
// that renews every TTL/3: no renewal is answered lease_lost, and no gap
// between successful renewals reaches the TTL. The lease keeps its token.
func TestRollingRestartLosesNoLease(t *testing.T) {
	c, l := startLedCluster(t, 3)
	const ttl = 3 * time.Second
	const key = "rolling/singleton"
	const holder = "scheduler-1"
	granted := c.acquire(t, c.followers(l)[0], key, holder, ttl.String(), http.StatusCreated)
	h, stopRenewer := c.startRenewer(t, key, holder, granted.Token, ttl/3)

	order := append(c.followers(l), l)
	for _, i := range order {
		c.stop(t, i) // SIGTERM; exit 0 within stopTimeout
		c.restart(t, i)
		poll.WaitFor(t, electionTimeout, func() error {
			if r, code := c.readyz(i); code != http.StatusOK || !r.Ready {
				return fmt.Errorf("%s not ready: %d %+v", c.nodes[i].id, code, r)
			}
			return nil
		})
		c.leader(t)
		t.Logf("restarted %s", c.nodes[i].id)
	}
	before := h.snapshot().ok
	poll.WaitFor(t, 10*time.Second, func() error { // renewals go on after the last restart
		if n := h.snapshot().ok - before; n < 2 {
			return fmt.Errorf("%d renewals since the last restart, want 2", n)
		}
		return nil
	})
	stopRenewer()
	s := h.snapshot()
	t.Logf("renewals: %d ok, %d transient failures; longest gap between successful renewals %v (TTL %v)", s.ok, s.transient, s.maxGap.Round(time.Millisecond), ttl)
	if len(s.lost) > 0 || len(s.unexpected) > 0 {
		t.Errorf("the holder lost its lease during the rolling restart: lost %v, unexpected %v", s.lost, s.unexpected)
	}
	if s.maxGap >= ttl {
		t.Errorf("a gap of %v between successful renewals, not less than the TTL %v: the holder would have stopped", s.maxGap, ttl)
	}
	got := c.get(t, c.leader(t), key)
	if got.State != "held" || got.Holder != holder || got.Token != granted.Token {
		t.Errorf("after the rolling restart: %s is %q by %q with token %d, want held by %s with token %d", key, got.State, got.Holder, got.Token, holder, granted.Token)
	}
}
