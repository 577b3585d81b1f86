package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestTokensSurviveFullRestart: fencing tokens are never reused after every
// server restarts from its data dir, free keys keep their last token, and a
// lease held before the restart is still held by the same holder under the
// same token while its TTL has not passed.
func TestTokensSurviveFullRestart(t *testing.T) {
	c, l := startLedCluster(t, 3)

	// Advance the token counter with acquisitions and releases on a few
	// keys, through every node.
	var maxToken uint64
	lastTokens := map[string]uint64{}
	for round := 0; round < 2; round++ {
		for k, key := range []string{"restart/a", "restart/b", "restart/c"} {
			via := (round + k) % len(c.nodes)
			holder := fmt.Sprintf("worker-%d", round)
			got := c.acquire(t, via, key, holder, "5s", http.StatusCreated)
			if got.Token <= maxToken {
				t.Fatalf("acquire %s: token %d, want above every earlier token (%d)", key, got.Token, maxToken)
			}
			maxToken, lastTokens[key] = got.Token, got.Token
			c.release(t, via, key, holder, got.Token)
		}
	}
	const heldTTL = 60 * time.Second
	acquiredAt := time.Now()
	held := c.acquire(t, l, "restart/held", "keeper", heldTTL.String(), http.StatusCreated)
	if held.Token <= maxToken {
		t.Fatalf("acquire restart/held: token %d, want above %d", held.Token, maxToken)
	}
	maxToken = held.Token
	before := c.list(t, l)
	t.Logf("before the restart: %d keys, highest token %d", len(before.Leases), maxToken)

	stopped := time.Now()
	for i := range c.nodes {
		c.stop(t, i)
	}
	for i := range c.nodes {
		c.restart(t, i)
	}
	l = c.leader(t)
	t.Logf("all three servers stopped and back with leader %s in %v", c.nodes[l].id, time.Since(stopped).Round(time.Millisecond))

	t.Run("free keys keep their last token", func(t *testing.T) {
		for key, want := range lastTokens {
			got := c.get(t, l, key)
			if got.State != "free" || got.Token != want || got.Reason != "released" {
				t.Errorf("%s after the restart: state %q token %d reason %q, want free with token %d, released", key, got.State, got.Token, got.Reason, want)
			}
		}
	})

	t.Run("a held lease is still held", func(t *testing.T) {
		got := c.get(t, l, "restart/held")
		if elapsed := time.Since(acquiredAt); elapsed >= heldTTL {
			t.Fatalf("the restart took %v, longer than the lease's TTL %v: cannot check that the lease survived", elapsed, heldTTL)
		}
		if got.State != "held" || got.Holder != "keeper" || got.Token != held.Token {
			t.Fatalf("restart/held after the restart: state %q holder %q token %d, want held by keeper with token %d", got.State, got.Holder, got.Token, held.Token)
		}
		// The holder can go on renewing it.
		r := c.call(t, l, http.MethodPost, "/v1/renew/restart/held", map[string]any{"holder": "keeper", "token": held.Token})
		if r.Status != http.StatusOK {
			t.Errorf("renew restart/held after the restart: got %v, want 200", r)
		}
	})

	t.Run("new grants get higher tokens", func(t *testing.T) {
		for i, key := range []string{"restart/after", "restart/a"} {
			got := c.acquire(t, i%len(c.nodes), key, "worker-after", "5s", http.StatusCreated)
			if got.Token <= maxToken {
				t.Errorf("acquire %s after the restart: token %d, want above every token seen before (%d)", key, got.Token, maxToken)
			}
			maxToken = got.Token
		}
		for i := range c.nodes {
			poll.WaitFor(t, 5*time.Second, func() error {
				st, err := c.status(i)
				if err != nil {
					return err
				}
				if st.LastToken != maxToken {
					return fmt.Errorf("%s: last_token %d, want %d", c.nodes[i].id, st.LastToken, maxToken)
				}
				return nil
			})
		}
	})
}

// TestLeaderKillFailover: a holder that renews every TTL/3, through any
// node, keeps its lease and its token when the leader dies: renewals may
// fail for a moment while a new leader is elected, but the lease is never
// lost; and the dead server, restarted from its data dir, rejoins and
// catches up.
func TestLeaderKillFailover(t *testing.T) {
	c := startCluster(t, 3)
	old := c.leader(t)
	const ttl = 3 * time.Second
	const key = "failover/singleton"
	const holder = "scheduler-1"
	granted := c.acquire(t, c.followers(old)[0], key, holder, ttl.String(), http.StatusCreated)

	h, stopRenewer := c.startRenewer(t, key, holder, granted.Token, ttl/3)

	poll.WaitFor(t, 10*time.Second, func() error {
		s := h.snapshot()
		if len(s.lost) > 0 {
			t.Fatalf("the holder lost its lease before the kill: %q", s.lost)
		}
		if s.ok < 2 {
			return fmt.Errorf("%d successful renewals, want 2 before the kill (unexpected: %q, transient: %q)", s.ok, s.unexpected, s.errors)
		}
		return nil
	})

	old = c.leader(t) // the leadership may have moved on a busy machine
	killed := time.Now()
	c.kill(t, old)
	renewalsAtKill := h.snapshot().ok
	l := c.leader(t)
	elected := time.Since(killed)
	if l == old {
		t.Fatalf("leader is still the killed node %s", c.nodes[old].id)
	}
	poll.WaitFor(t, 10*time.Second, func() error {
		s := h.snapshot()
		if len(s.lost) > 0 {
			t.Fatalf("the holder lost its lease during the failover: %q", s.lost)
		}
		if s.ok-renewalsAtKill < 3 {
			return fmt.Errorf("%d successful renewals since the kill, want 3 (unexpected: %q)", s.ok-renewalsAtKill, s.unexpected)
		}
		return nil
	})
	stopRenewer()
	s := h.snapshot()
	t.Logf("leader %s killed; %s established in %v; renewals: %d ok, %d transient failures; longest gap between successful renewals %v (TTL %v)",
		c.nodes[old].id, c.nodes[l].id, elected.Round(time.Millisecond), s.ok, s.transient, s.maxGap.Round(time.Millisecond), ttl)
	for _, e := range s.errors {
		t.Logf("transient renewal failure: %s", e)
	}
	if len(s.lost) > 0 {
		t.Errorf("the holder lost its lease during the failover: %v", s.lost)
	}
	if len(s.unexpected) > 0 {
		t.Errorf("unexpected renewal answers: %v", s.unexpected)
	}

	got := c.get(t, l, key)
	if got.State != "held" || got.Holder != holder || got.Token != granted.Token {
		t.Errorf("after the failover: %s is %q by %q with token %d, want held by %s with token %d", key, got.State, got.Holder, got.Token, holder, granted.Token)
	}

	// A write the killed node has not seen.
	after := c.acquire(t, l, "failover/after", "worker", "30s", http.StatusCreated)
	leaderID := c.nodes[l].id
	target := c.mustStatus(t, l).AppliedIndex

	c.restart(t, old)
	poll.WaitFor(t, 15*time.Second, func() error {
		st, err := c.status(old)
		if err != nil {
			return err
		}
		// Leadership may move again meanwhile on a loaded machine: the
		// restarted node must agree with the node that leads now.
		ls, err := c.status(l)
		if err != nil {
			return err
		}
		if ls.LeaderID != leaderID {
			leaderID = ls.LeaderID
			for j, n := range c.nodes {
				if n.id == leaderID {
					l = j
				}
			}
		}
		if st.LeaderID != leaderID || st.LeaderHTTPAddr != c.nodes[l].httpAddr {
			return fmt.Errorf("restarted %s sees leader %q at %q, want %s at %s", st.NodeID, st.LeaderID, st.LeaderHTTPAddr, leaderID, c.nodes[l].httpAddr)
		}
		if st.Role != "follower" && st.NodeID != leaderID {
			return fmt.Errorf("restarted %s is %s, want follower", st.NodeID, st.Role)
		}
		if st.AppliedIndex < target {
			return fmt.Errorf("restarted %s applied index %d, want >= %d", st.NodeID, st.AppliedIndex, target)
		}
		return nil
	})
	r := c.call(t, old, http.MethodGet, "/v1/leases/failover/after?stale=true", nil)
	var stale lease
	if r.Status != http.StatusOK {
		t.Fatalf("stale read on the restarted node: got %v, want 200", r)
	}
	r.decode(t, &stale)
	if stale.Token != after.Token || stale.Holder != "worker" {
		t.Errorf("stale read on the restarted node: got token %d holder %q, want %d worker", stale.Token, stale.Holder, after.Token)
	}
	if got := c.leader(t); got != l {
		t.Errorf("leader after the rejoin: %s, want %s unchanged", c.nodes[got].id, leaderID)
	}
}

// startRenewer starts a renewer of key through every node's address, and
// returns it with the function that stops it (also called at the test's
// end).
func (c *cluster) startRenewer(t *testing.T, key, holder string, token uint64, interval time.Duration) (*renewer, func()) {
	h := &renewer{c: c, addrs: c.httpAddrs(), key: key, holder: holder, token: token, interval: interval, stop: make(chan struct{})}
	h.wg.Add(1)
	go h.run()
	stop := sync.OnceFunc(func() { close(h.stop); h.wg.Wait() })
	t.Cleanup(stop)
	return h, stop
}

// renewer renews one lease every interval, sending each renewal to the next
// address in turn, and retries quickly through the next address when a
// renewal gets no definite answer. Like a real holder, it stops at the
// first lease_lost.
type renewer struct {
	c        *cluster
	addrs    []string
	key      string
	holder   string
	token    uint64
	interval time.Duration
	stop     chan struct{}
	wg       sync.WaitGroup

	mu    sync.Mutex
	stats renewStats
}

type renewStats struct {
	ok         int
	transient  int
	maxGap     time.Duration
	lastOK     time.Time
	errors     []string // the first transient failures, for the log
	lost       []string // 404 lease_lost answers: the guarantee broken
	unexpected []string // anything else
}

func (h *renewer) snapshot() renewStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.stats
	s.errors = append([]string(nil), s.errors...)
	s.lost = append([]string(nil), s.lost...)
	s.unexpected = append([]string(nil), s.unexpected...)
	return s
}

// noteTransient keeps the first few transient failures; h.mu is held.
func (h *renewer) noteTransient(msg string) {
	if len(h.stats.errors) < 20 {
		h.stats.errors = append(h.stats.errors, msg)
	}
}

func (h *renewer) run() {
	defer h.wg.Done()
	body := map[string]any{"holder": h.holder, "token": h.token}
	next := 0
	for {
		addr := h.addrs[next%len(h.addrs)]
		next++
		sent := time.Now()
		r, err := h.c.try(addr, http.MethodPost, "/v1/renew/"+h.key, body)
		pause := h.interval
		h.mu.Lock()
		switch {
		case err != nil:
			h.stats.transient++
			h.noteTransient(fmt.Sprintf("%s via %s: %v", sent.Format("15:04:05.000"), addr, err))
			pause = 50 * time.Millisecond
		case r.Status == http.StatusOK:
			if !h.stats.lastOK.IsZero() && sent.Sub(h.stats.lastOK) > h.stats.maxGap {
				h.stats.maxGap = sent.Sub(h.stats.lastOK)
			}
			h.stats.lastOK = sent
			h.stats.ok++
		case r.Status == http.StatusServiceUnavailable || r.Status == http.StatusGatewayTimeout:
			h.stats.transient++
			h.noteTransient(fmt.Sprintf("%s via %s: %v", sent.Format("15:04:05.000"), addr, r))
			pause = 50 * time.Millisecond
		default:
			var e apiError
			json.Unmarshal(r.Body, &e)
			if e.Error == "lease_lost" {
				h.stats.lost = append(h.stats.lost, fmt.Sprintf("%s via %s: %v", sent.Format("15:04:05.000"), addr, r))
				h.mu.Unlock()
				return
			}
			h.stats.unexpected = append(h.stats.unexpected, fmt.Sprintf("via %s: %v", addr, r))
			pause = 50 * time.Millisecond
		}
		h.mu.Unlock()
		timer := time.NewTimer(pause)
		select {
		case <-h.stop:
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}
