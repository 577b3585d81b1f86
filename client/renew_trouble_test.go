package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client/wire"
)

// failureWatch records the renewal failures a lease reports, and whether
// the lease was still held when each was reported.
type failureWatch struct {
	mu        sync.Mutex
	failures  int
	whileHeld int
	lost      error
}

func (w *failureWatch) hooks() Hooks {
	return Hooks{
		OnRenewFailed: func(l *Lease, err error) {
			held := l.Err() == nil
			w.mu.Lock()
			defer w.mu.Unlock()
			w.failures++
			if held {
				w.whileHeld++
			}
		},
		OnLost: func(l *Lease, err error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.lost = err
		},
	}
}

func (w *failureWatch) get() (failures, whileHeld int, lost error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failures, w.whileHeld, w.lost
}

// newTroubleClient is a lease client that retries as a default Config
// does, logging into out.
func newTroubleClient(t *testing.T, addr string, out *logBuffer) *Client {
	t.Helper()
	c := newLeaseClient(t, addr)
	c.cfg.RetryMax = DefaultConfig().RetryMax
	c.log = hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: out})
	return c
}

// A renewal whose server hangs is reported (OnRenewFailed and the
// lease_renew_failed log) while the lease is still held, within one
// renewal interval, not only when the local deadline ends the lease: a
// holder learns of the trouble while it has most of its time left.
func TestHungRenewalIsReportedWhileTheLeaseIsHeld(t *testing.T) {
	f := newFakeTenure(t)
	var logs logBuffer
	c := newTroubleClient(t, f.URL, &logs)
	f.set(func(f *fakeTenure) { f.renewFault = hang })
	var w failureWatch
	const ttl = 3 * time.Second
	l, err := c.Acquire(context.Background(), "scene-01", WithTTL(ttl), WithHooks(w.hooks()))
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	defer l.Release(context.Background())
	waitUntil(t, 2*ttl, "the lease to end", func() bool { return l.Err() != nil })

	failures, whileHeld, _ := w.get()
	if whileHeld < 1 {
		t.Errorf("OnRenewFailed ran %d times while the lease was held (%d in all), want at least once", whileHeld, failures)
	}
	text := logs.String()
	failed, lost := strings.Index(text, "lease_renew_failed"), strings.Index(text, "lease_lost")
	if failed < 0 || lost < 0 || failed > lost {
		t.Errorf("want lease_renew_failed logged before lease_lost; log:\n%s", text)
	}
	if !errors.Is(l.Err(), ErrLeaseExpiredLocally) {
		t.Errorf("Err = %v, want ErrLeaseExpiredLocally (no refusal came)", l.Err())
	}
}

// internalError is a renewFault that answers 500.
func internalError(w http.ResponseWriter, r *http.Request) {
	writeError(w, 500, "internal", "boom")
}

// WithLoseOnRenewFailure ends the lease at its first failed renewal, long
// before its local deadline: a hang (one attempt, no retry), a 500 (no
// retry), or a cluster without a leader for a whole renewal interval (the
// answers of a leader change are retried within it). A lease of the same
// client without the option rides out the same failures until its
// deadline, and the lost lease is still released.
func TestLoseOnRenewFailureEndsTheLeaseAtTheFirstFailure(t *testing.T) {
	tests := []struct {
		name     string
		fault    func(w http.ResponseWriter, r *http.Request)
		attempts func(n int) bool // of the strict lease's failed renewal
		wantErr  error
	}{
		{"no answer", hang, func(n int) bool { return n == 1 }, nil},
		{"500", internalError, func(n int) bool { return n == 1 }, nil},
		{"503 no leader for an interval", unavailable, func(n int) bool { return n > 1 }, ErrNoLeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeTenure(t)
			var logs logBuffer
			c := newTroubleClient(t, f.URL, &logs)
			const ttl = 3 * time.Second
			var w failureWatch
			strict, err := c.Acquire(context.Background(), "strict", WithTTL(ttl), WithLoseOnRenewFailure(), WithHooks(w.hooks()))
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			patient, err := c.Acquire(context.Background(), "patient", WithTTL(4*ttl)) // its deadline far beyond the strict lease's
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			f.set(func(f *fakeTenure) { f.renewFault = tt.fault })
			waitUntil(t, 2*ttl, "the strict lease to end", func() bool { return strict.Err() != nil })

			err = strict.Err()
			if !errors.Is(err, ErrRenewFailed) {
				t.Errorf("Err = %v, want ErrRenewFailed (ended before its deadline)", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Err = %v, want it to wrap %v", err, tt.wantErr)
			}
			if perr := patient.Err(); perr != nil {
				t.Errorf("the lease without the option ended with the strict one: %v", perr)
			}
			n := 0
			for _, r := range f.renewRequests() {
				if slices.Contains(r.Keys, "strict") {
					n++
				}
			}
			if !tt.attempts(n) {
				t.Errorf("%d renewal attempts of the strict lease", n)
			}
			if failures, _, lost := w.get(); failures != 1 || !errors.Is(lost, ErrRenewFailed) {
				t.Errorf("OnRenewFailed ran %d times, OnLost with %v; want OnRenewFailed once, then OnLost with ErrRenewFailed", failures, lost)
			}
			text := logs.String()
			if failed, lostAt := strings.Index(text, "lease_renew_failed: key=strict"), strings.Index(text, "lease_lost: key=strict"); failed < 0 || lostAt < failed {
				t.Errorf("want lease_renew_failed then lease_lost logged for the strict lease; log:\n%s", text)
			}
			f.set(func(f *fakeTenure) { f.renewFault = nil })
			if err := strict.Release(context.Background()); err != nil {
				t.Errorf("Release: %v", err)
			}
			if f.lease("strict").held {
				t.Errorf("the cluster still holds the strict lease after Release")
			}
			patient.Release(context.Background())
		})
	}
}

// WithRenewInterval renews at the interval asked for (the tests' jitter
// factor is 1), not at the default TTL/3.
func TestRenewIntervalIsTheOneAskedFor(t *testing.T) {
	f := newFakeTenure(t)
	c := newLeaseClient(t, f.URL)
	const ttl, interval = 3 * time.Second, 300 * time.Millisecond
	l, err := c.Acquire(context.Background(), "scene-01", WithTTL(ttl), WithRenewInterval(interval))
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	defer l.Release(context.Background())
	acquired := f.requests()[0].At
	waitUntil(t, 2*ttl, "four renewals", func() bool { return len(f.renewRequests()) >= 4 })
	last := acquired
	for i, r := range f.renewRequests()[:4] {
		if gap := r.At.Sub(last); gap < interval*9/10 || gap >= ttl/3 {
			t.Errorf("renewal %d came %v after the one before, want about %v (the default would be %v)", i+1, gap, interval, ttl/3)
		}
		last = r.At
	}
}

// An Election logs its leadership changes at Info (leader_acquired,
// leader_resigned, leader_lost) and reports a failed acquisition: at Warn
// while a campaign retries (leader_acquire_failed retrying=true), at Error
// when it fails for good (retrying=false).
func TestElectionLogsLeadershipChanges(t *testing.T) {
	f := newFakeTenure(t)
	var logs logBuffer
	c := newLeaseClient(t, f.URL)
	c.log = hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &logs})
	e := c.Election("scheduler", WithTTL(3*time.Second))
	ctx := context.Background()
	want := func(what string) {
		t.Helper()
		waitUntil(t, 5*time.Second, what+" logged", func() bool { return strings.Contains(logs.String(), what) })
	}

	lead, err := e.Campaign(ctx)
	if err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	want(fmt.Sprintf("[INFO]  lease: leader_acquired: election=scheduler key=%s holder=h1 token=%d ttl=3s", e.Key(), lead.Token()))
	if err := lead.Resign(ctx); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	want(fmt.Sprintf("[INFO]  lease: leader_resigned: election=scheduler key=%s holder=h1 token=%d", e.Key(), lead.Token()))

	lead, err = e.Campaign(ctx)
	if err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	f.revoke(e.Key())
	want(fmt.Sprintf("[INFO]  lease: leader_lost: election=scheduler key=%s holder=h1 token=%d", e.Key(), lead.Token()))
	lead.Resign(ctx)
	if n := strings.Count(logs.String(), "leader_resigned"); n != 1 {
		t.Errorf("leader_resigned logged %d times, want once: the resign of a lost leadership is no change", n)
	}

	down := newLeaseClient(t, "127.0.0.1:1") // nothing listens: connection refused
	down.log = c.log
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := down.Election("scheduler").Campaign(cctx)
		done <- err
	}()
	want("[WARN]  lease: leader_acquire_failed: election=scheduler")
	cancel()
	<-done
	if !strings.Contains(logs.String(), "failures=1 retrying=true") {
		t.Errorf("want the first failure of a retried campaign logged; log:\n%s", logs.String())
	}

	if _, err := c.Election("bad", WithTTL(-time.Second)).Campaign(ctx); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Campaign = %v, want ErrInvalid", err)
	}
	want("[ERROR] lease: leader_acquire_failed: election=bad")
	if !strings.Contains(logs.String(), "retrying=false") {
		t.Errorf("want a campaign that failed for good logged with retrying=false; log:\n%s", logs.String())
	}
}

// Renewals are jittered (±10% of the interval, drawn per call), so a fleet
// of clients that acquired at the same moment does not renew in step: the
// first renewals of 16 clients spread over the window, each within it.
func TestRenewalJitterSpreadsAFleet(t *testing.T) {
	f := newFakeTenure(t)
	const n, ttl = 16, 1500 * time.Millisecond
	interval := ttl / 3
	var leases []*Lease
	for i := range n {
		cfg := DefaultConfig()
		cfg.Addresses = []string{f.URL}
		cfg.Holder = fmt.Sprintf("h%d", i)
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		l, err := c.Acquire(context.Background(), fmt.Sprintf("k%d", i), WithTTL(ttl))
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		leases = append(leases, l)
	}
	defer func() {
		for _, l := range leases {
			l.Release(context.Background())
		}
	}()
	acquired := map[string]time.Time{}
	for _, r := range f.requests() {
		if r.Method == http.MethodPut {
			acquired[strings.TrimPrefix(r.Path, "/v1/leases/")] = r.At
		}
	}
	first := map[string]time.Duration{}
	waitUntil(t, 3*ttl, "a renewal of every lease", func() bool {
		for _, r := range f.renewRequests() {
			for _, k := range r.Keys {
				if _, seen := first[k]; !seen {
					first[k] = r.At.Sub(acquired[k])
				}
			}
		}
		return len(first) == n
	})
	lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
	for k, d := range first {
		if d < interval*9/10-20*time.Millisecond || d > interval*11/10+100*time.Millisecond {
			t.Errorf("%s first renewed %v after its acquire, want within %v ±10%%", k, d, interval)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	if spread := hi - lo; spread < interval/20 {
		t.Errorf("the first renewals of %d clients spread over %v, want at least %v: is the jitter gone?", n, spread, interval/20)
	}
}

// A call whose deadline cuts off an attempt wraps what a server answered
// before it (here no_leader), not only the cut-off attempt: a lease lost
// after renewals that ran into their interval still says why.
func TestDeadlineCutAttemptKeepsTheServersAnswer(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			writeError(w, http.StatusServiceUnavailable, wire.CodeNoLeader, "no leader")
			return
		}
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := newLeaseClient(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, err := c.Leases().Get(ctx, "scene-01", nil)
	if !errors.Is(err, ErrNoLeader) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Get = %v, want it to wrap the deadline and ErrNoLeader", err)
	}
}
