package client

import (
	"context"
	"encoding/json"
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

// doneAt returns a function that reports when l's context ended, as seen
// by a goroutine waiting on Done (so never earlier than it ended).
func doneAt(t *testing.T, l *Lease) func() time.Time {
	t.Helper()
	var (
		mu sync.Mutex
		at time.Time
	)
	go func() {
		<-l.Done()
		now := time.Now()
		mu.Lock()
		at = now
		mu.Unlock()
	}()
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return at
	}
}

// lastOK returns the time the last renew request that was answered with
// success arrived, or zero.
func lastOK(reqs []fakeRenew) time.Time {
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].OK {
			return reqs[i].At
		}
	}
	return time.Time{}
}

func TestLeaseDeadlineCountsFromSentAtOfRenewal(t *testing.T) {
	f := newFakeTenure(t)
	c := newLeaseClient(t, f.URL)
	const ttl, margin = 900 * time.Millisecond, 150 * time.Millisecond
	// Below the attempt timeout (TTL/5, at least 200ms): every attempt
	// is answered.
	const answerDelay = 120 * time.Millisecond
	f.set(func(f *fakeTenure) { f.renewDelay = answerDelay })

	l, err := c.Acquire(context.Background(), "scene-01", WithTTL(ttl), WithMargin(margin))
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	ended := doneAt(t, l)
	first := l.Deadline()
	waitUntil(t, 3*time.Second, "a renewal to move the deadline", func() bool { return l.Deadline().After(first) })

	// The renewal's answer took 120ms; the deadline must count from when
	// the request was sent, which is no later than when the server got it.
	reqs := f.renewRequests()
	recv := reqs[0].At
	got := l.Deadline()
	if want := recv.Add(ttl - margin); got.After(want) {
		t.Errorf("deadline %v after renewal received at %v: %v past received + TTL - margin: counted from the answer, not from SentAt",
			got.Sub(recv), recv.Format("15:04:05.000"), got.Sub(want))
	}
	if low := recv.Add(ttl - margin - 50*time.Millisecond); got.Before(low) {
		t.Errorf("deadline %v after the renewal was received, want about TTL - margin = %v", got.Sub(recv), ttl-margin)
	}

	// Renewals now hang: the lease must end at its local deadline, before
	// the server could expire it.
	f.set(func(f *fakeTenure) { f.renewFault = hang })
	waitUntil(t, 3*time.Second, "the lease to end", func() bool { return !ended().IsZero() })
	okAt := lastOK(f.renewRequests())
	lost := ended()
	if serverExpiry := okAt.Add(ttl); !lost.Before(serverExpiry) {
		t.Errorf("lease ended %v after the last successful renewal arrived, not before the server's earliest expiry (TTL %v)", lost.Sub(okAt), ttl)
	}
	if early := okAt.Add(ttl - margin - 50*time.Millisecond); lost.Before(early) {
		t.Errorf("lease ended %v after the last successful renewal arrived, want about TTL - margin = %v", lost.Sub(okAt), ttl-margin)
	}
	if err := l.Err(); !errors.Is(err, ErrLeaseExpiredLocally) {
		t.Errorf("Err = %v, want ErrLeaseExpiredLocally", err)
	}
	if cause := context.Cause(l.Context()); cause != l.Err() {
		t.Errorf("context cause = %v, want Err %v", cause, l.Err())
	}
}

func TestLeaseLostAtOnceOnLeaseLost(t *testing.T) {
	// lostWith makes the cluster refuse the lease's renewals with reason.
	lostWith := func(reason string) func(f *fakeTenure, key string) {
		return func(f *fakeTenure, key string) {
			f.set(func(f *fakeTenure) { f.leases[key].lostWith = reason })
		}
	}
	tests := []struct {
		name       string
		lose       func(f *fakeTenure, key string)
		wantReason string
	}{
		{"revoked by an operator", func(f *fakeTenure, key string) { f.revoke(key) }, ReasonRevoked},
		{"expired on the leader", lostWith(ReasonExpired), ReasonExpired},
		// An operator's safe revoke, disable or prohibit: the lease is
		// still held on the cluster, but its renewals are refused.
		{"ending: revoked", lostWith(ReasonRevoked), ReasonRevoked},
		{"ending: disabled", lostWith(ReasonDisabled), ReasonDisabled},
		{"ending: prohibited", lostWith(ReasonProhibited), ReasonProhibited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeTenure(t)
			c := newLeaseClient(t, f.URL)
			const ttl = 3 * time.Second // interval 1s, deadline 2.7s
			var lostCalls atomic.Int32
			l, err := c.Acquire(context.Background(), "scene-01", WithTTL(ttl),
				WithHooks(Hooks{OnLost: func(*Lease, error) { lostCalls.Add(1) }}))
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			other, err := c.Acquire(context.Background(), "scene-02", WithTTL(ttl))
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			t.Cleanup(func() { other.Release(context.Background()) })
			ended := doneAt(t, l)

			lostAt := time.Now()
			tt.lose(f, "scene-01")
			waitUntil(t, 3*time.Second, "the lease to end", func() bool { return !ended().IsZero() })
			if took, bound := ended().Sub(lostAt), ttl/3*11/10+300*time.Millisecond; took > bound {
				t.Errorf("lease ended %v after the server refused it, want within the next renewal (%v)", took, bound)
			}
			err = l.Err()
			var ae *APIError
			if !errors.Is(err, ErrLeaseLost) || !errors.As(err, &ae) || ae.Reason != tt.wantReason {
				t.Errorf("Err = %v, want ErrLeaseLost with reason %s", err, tt.wantReason)
			}
			if cause := context.Cause(l.Context()); cause != err {
				t.Errorf("context cause = %v, want Err", cause)
			}
			if n := lostCalls.Load(); n != 1 {
				t.Errorf("OnLost called %d times, want 1", n)
			}
			if other.Err() != nil {
				t.Errorf("the other lease of the client ended too: %v", other.Err())
			}
			// A lease an operator ended stays held on the cluster until its
			// deadline: the holder's Release, once it stopped, frees it.
			// Any other refused lease has nothing left to release.
			before := f.count()
			wantRequests := 0
			if tt.wantReason != ReasonExpired {
				wantRequests = 1
			}
			if err := l.Release(context.Background()); err != nil || f.count()-before != wantRequests {
				t.Errorf("Release of a lease the cluster refused = %v with %d requests, want nil and %d", err, f.count()-before, wantRequests)
			}
			if wantRequests == 1 && f.lease("scene-01").held {
				t.Errorf("the ended lease is still held after its holder released it")
			}
			// The lost key is not renewed again: the next two bulk calls carry
			// only the other lease.
			n := len(f.renewRequests())
			waitUntil(t, 5*time.Second, "two more renewals", func() bool { return len(f.renewRequests()) >= n+2 })
			for _, r := range f.renewRequests()[n:] {
				if slices.Contains(r.Keys, "scene-01") {
					t.Errorf("the lost lease was renewed again: %v", r.Keys)
				}
			}
		})
	}
}

func TestLeaseTransientFailuresRetriedUntilDeadline(t *testing.T) {
	tests := []struct {
		name    string
		fault   func(w http.ResponseWriter, r *http.Request)
		wantErr error // also wrapped in Err
	}{
		{"503 no leader", unavailable, ErrNoLeader},
		{"no answer", hang, nil},
		{"connection closed", resetConn, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeTenure(t)
			c := newLeaseClient(t, f.URL)
			const ttl, margin = time.Second, 100 * time.Millisecond
			var failures atomic.Int32
			f.set(func(f *fakeTenure) { f.renewFault = tt.fault })
			l, err := c.Acquire(context.Background(), "scene-01", WithTTL(ttl), WithMargin(margin),
				WithHooks(Hooks{OnRenewFailed: func(*Lease, error) { failures.Add(1) }}))
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			acquired := f.requests()[0].At
			ended := doneAt(t, l)
			waitUntil(t, 3*time.Second, "the lease to end", func() bool { return !ended().IsZero() })

			if lost := ended(); lost.Before(acquired.Add(ttl-margin-50*time.Millisecond)) || !lost.Before(acquired.Add(ttl)) {
				t.Errorf("lease ended %v after the acquire arrived, want about TTL - margin = %v and before TTL", lost.Sub(acquired), ttl-margin)
			}
			reqs := f.renewRequests()
			if len(reqs) < 2 {
				t.Errorf("%d renewal attempts before the deadline, want the failures retried", len(reqs))
			}
			if failures.Load() < 1 {
				t.Errorf("OnRenewFailed never called: each renewal is bounded by the interval, so a failure or a hang is reported")
			}
			err = l.Err()
			if !errors.Is(err, ErrLeaseExpiredLocally) {
				t.Errorf("Err = %v, want ErrLeaseExpiredLocally", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Err = %v, want it to wrap %v", err, tt.wantErr)
			}
			if l.Release(context.Background()) != nil {
				t.Errorf("Release of a lease that expired locally failed")
			}
			if got := f.lease("scene-01"); got.held {
				t.Errorf("after Release the server still holds the key: a lease that expired locally must still be released")
			}
		})
	}
}

func TestLeaseRenewalsOfOneClientShareOneCall(t *testing.T) {
	f := newFakeTenure(t)
	c := newLeaseClient(t, f.URL)
	const ttl = 900 * time.Millisecond // interval 300ms
	ctx := context.Background()
	var leases []*Lease
	keys := []string{"scene-01", "scene-02", "scene-03", "scene-04"}
	for i, key := range keys {
		if i > 0 {
			time.Sleep(40 * time.Millisecond) // acquired at different moments
		}
		l, err := c.Acquire(ctx, key, WithTTL(ttl))
		if err != nil {
			t.Fatalf("Acquire %s: %v", key, err)
		}
		leases = append(leases, l)
	}
	l, err := c.Acquire(ctx, "scene-09", WithTTL(ttl), WithHolder("h2"))
	if err != nil {
		t.Fatalf("Acquire for h2: %v", err)
	}
	leases = append(leases, l)
	t.Cleanup(func() {
		for _, l := range leases {
			l.Release(ctx)
		}
	})

	waitUntil(t, 5*time.Second, "8 renew calls", func() bool { return len(f.renewRequests()) >= 8 })
	reqs := f.renewRequests()
	for _, r := range reqs {
		if !r.Bulk {
			t.Fatalf("a renewal was sent alone (POST /v1/renew/%s), want every renewal in a bulk call", r.Keys[0])
		}
	}
	// After the first tick every call of h1 carries all four leases, and
	// h2's lease goes in a call of its own (one call per holder per tick).
	var h1 [][]string
	for _, r := range reqs {
		switch r.Holder {
		case "h1":
			h1 = append(h1, r.Keys)
		case "h2":
			if !slices.Equal(r.Keys, []string{"scene-09"}) {
				t.Errorf("h2's call carried %v, want only its own lease", r.Keys)
			}
		}
	}
	if len(h1) < 3 {
		t.Fatalf("%d calls for h1, want at least 3", len(h1))
	}
	for i, got := range h1[1:] {
		if !slices.Equal(got, keys) {
			t.Errorf("call %d of h1 carried %v, want all of %v", i+2, got, keys)
		}
	}
	for _, l := range leases {
		if l.Err() != nil {
			t.Errorf("%s: %v", l.Key(), l.Err())
		}
	}
}

func TestLeaseFailedBulkCallKeepsEachUntilItsOwnDeadline(t *testing.T) {
	f := newFakeTenure(t)
	c := newLeaseClient(t, f.URL)
	ctx := context.Background()
	short, err := c.Acquire(ctx, "short", WithTTL(600*time.Millisecond), WithMargin(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	long, err := c.Acquire(ctx, "long", WithTTL(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { long.Release(ctx) })
	longDeadline := long.Deadline()
	f.set(func(f *fakeTenure) { f.renewFault = unavailable })

	<-short.Done()
	if !errors.Is(short.Err(), ErrLeaseExpiredLocally) {
		t.Errorf("short lease: Err = %v, want ErrLeaseExpiredLocally", short.Err())
	}
	if err := long.Err(); err != nil {
		t.Fatalf("the long lease ended with the short one, %v before its own deadline: %v", time.Until(longDeadline), err)
	}
	f.set(func(f *fakeTenure) { f.renewFault = nil })
	waitUntil(t, 3*time.Second, "a renewal of the long lease", func() bool { return long.Deadline().After(longDeadline) })
	if err := long.Err(); err != nil {
		t.Errorf("long lease: Err = %v after the server came back", err)
	}
}

func TestLeaseRelease(t *testing.T) {
	f := newFakeTenure(t)
	c := newLeaseClient(t, f.URL)
	ctx := context.Background()
	var lost atomic.Int32
	l, err := c.Acquire(ctx, "scene-01", WithTTL(600*time.Millisecond), WithHooks(Hooks{OnLost: func(*Lease, error) { lost.Add(1) }}))
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 3*time.Second, "a renewal", func() bool { return len(f.renewRequests()) >= 1 })

	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatalf("Done not closed after Release")
	}
	if !errors.Is(l.Err(), ErrReleased) || !errors.Is(context.Cause(l.Context()), ErrReleased) {
		t.Errorf("Err = %v, cause %v; want ErrReleased", l.Err(), context.Cause(l.Context()))
	}
	if got := f.lease("scene-01"); got.held || got.reason != ReasonReleased {
		t.Errorf("server state after Release: %+v, want released", got)
	}
	var deletes []seenRequest
	for _, r := range f.requests() {
		if r.Method == http.MethodDelete {
			deletes = append(deletes, r)
		}
	}
	if len(deletes) != 1 || deletes[0].Body != `{"holder":"h1","token":1,"secret":"`+c.LeaseSecret()+`"}` {
		t.Fatalf("release requests = %+v, want one DELETE with holder h1 and token 1", deletes)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("second Release: %v, want nil (idempotent)", err)
	}
	// The renewer stops with the last lease, and renews nothing more.
	waitUntil(t, 3*time.Second, "the renewer to stop", func() bool { return !c.keep.isRunning() })
	n := len(f.renewRequests())
	if got := f.count(); got != 1+n+1 {
		t.Errorf("server saw %d requests, want acquire + %d renewals + one release", got, n)
	}
	if lost.Load() != 0 {
		t.Errorf("OnLost called for a released lease")
	}

	// The key can be acquired again, with a new lease and token.
	again, err := c.Acquire(ctx, "scene-01", WithTTL(600*time.Millisecond))
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	if again.Token() <= l.Token() || again.Err() != nil {
		t.Errorf("new lease token %d err %v, want a token above %d and held", again.Token(), again.Err(), l.Token())
	}
	again.Release(ctx)
}

// deletes returns the release requests f received.
func deletes(f *fakeTenure) []seenRequest {
	var out []seenRequest
	for _, r := range f.requests() {
		if r.Method == http.MethodDelete {
			out = append(out, r)
		}
	}
	return out
}

func TestReleaseOfAnOldLeaseKeepsTheNewOneOfTheSameHolder(t *testing.T) {
	// The old lease expires locally while the cluster still holds it (its
	// renewals hang, as during a failover); the application acquires the
	// key again and the cluster answers with the lease it holds, same
	// token. The old lease's deferred Release must not free the new one.
	tests := []struct {
		name string
		// again acquires the key again and returns the new lease, calling
		// releaseOld at the point where the old lease's Release runs.
		again func(t *testing.T, f *fakeTenure, c *Client, releaseOld func()) *Lease
	}{
		{"after the new lease was acquired", func(t *testing.T, f *fakeTenure, c *Client, releaseOld func()) *Lease {
			l, err := c.Acquire(context.Background(), "scene-01", WithTTL(600*time.Millisecond))
			if err != nil {
				t.Fatalf("Acquire again: %v", err)
			}
			releaseOld()
			return l
		}},
		{"while the new lease is being acquired", func(t *testing.T, f *fakeTenure, c *Client, releaseOld func()) *Lease {
			f.set(func(f *fakeTenure) { f.acquireDelay = 150 * time.Millisecond })
			type result struct {
				l   *Lease
				err error
			}
			got := make(chan result, 1)
			go func() {
				l, err := c.Acquire(context.Background(), "scene-01", WithTTL(600*time.Millisecond))
				got <- result{l, err}
			}()
			puts := func() int {
				n := 0
				for _, r := range f.requests() {
					if r.Method == http.MethodPut {
						n++
					}
				}
				return n
			}
			waitUntil(t, 3*time.Second, "the second acquire to reach the server", func() bool { return puts() == 2 })
			releaseOld()
			r := <-got
			if r.err != nil {
				t.Fatalf("Acquire again: %v", r.err)
			}
			return r.l
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeTenure(t)
			c := newLeaseClient(t, f.URL)
			ctx := context.Background()
			f.set(func(f *fakeTenure) { f.renewFault = hang })
			old, err := c.Acquire(ctx, "scene-01", WithTTL(600*time.Millisecond))
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			waitUntil(t, 3*time.Second, "the lease to expire locally", func() bool { return old.Err() != nil })
			if !errors.Is(old.Err(), ErrLeaseExpiredLocally) || !f.lease("scene-01").held {
				t.Fatalf("old lease: Err %v, held by the fake %v; want expired locally and still held", old.Err(), f.lease("scene-01").held)
			}
			f.set(func(f *fakeTenure) { f.renewFault = nil })

			var relErr error
			l := tt.again(t, f, c, func() { relErr = old.Release(ctx) })
			if l.Token() != old.Token() {
				t.Fatalf("new token %d, want the cluster's answer to a retry: the old token %d", l.Token(), old.Token())
			}
			if relErr != nil {
				t.Errorf("Release of the old lease = %v, want nil", relErr)
			}
			if d := deletes(f); len(d) != 0 {
				t.Errorf("Release of the old lease sent %+v, want nothing while this holder keeps the key again", d)
			}
			if got := f.lease("scene-01"); !got.held || got.token != l.Token() {
				t.Errorf("the fake's lease after the old Release: %+v, want held with token %d", got, l.Token())
			}
			if err := l.Err(); err != nil {
				t.Errorf("the new lease ended: %v", err)
			}
			if err := old.Release(ctx); err != nil || len(deletes(f)) != 0 {
				t.Errorf("second Release of the old lease = %v with %d releases sent, want nil and none", err, len(deletes(f)))
			}
			if err := l.Release(ctx); err != nil {
				t.Fatalf("Release of the new lease: %v", err)
			}
			if got := f.lease("scene-01"); got.held {
				t.Errorf("the new lease's Release did not free the key")
			}
		})
	}
}

func TestAcquireOfAKeyAlreadyKept(t *testing.T) {
	f := newFakeTenure(t)
	c := newLeaseClient(t, f.URL)
	ctx := context.Background()
	l, err := c.Acquire(ctx, "scene-01")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Release(ctx) })
	tests := []struct {
		name string
		opts []LeaseOption
		want error
	}{
		{"same holder", nil, ErrDuplicateLease},
		{"same holder named", []LeaseOption{WithHolder("h1")}, ErrDuplicateLease},
		{"another holder", []LeaseOption{WithHolder("h2")}, ErrHeld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.count()
			_, err := c.Acquire(ctx, "scene-01", tt.opts...)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Acquire = %v, want %v", err, tt.want)
			}
			if tt.want == ErrDuplicateLease && f.count() != before {
				t.Errorf("a duplicate acquisition reached the server")
			}
		})
	}
	if l.Err() != nil {
		t.Errorf("the kept lease ended: %v", l.Err())
	}
}

func TestAcquireThatTookLongRenewsBeforeReturning(t *testing.T) {
	f := newFakeTenure(t)
	c := newLeaseClient(t, f.URL)
	const ttl, margin = 900 * time.Millisecond, 100 * time.Millisecond
	f.set(func(f *fakeTenure) { f.acquireDelay = 400 * time.Millisecond }) // more than TTL/3
	l, err := c.Acquire(context.Background(), "scene-01", WithTTL(ttl), WithMargin(margin))
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	defer l.Release(context.Background())
	reqs := f.renewRequests()
	if len(reqs) == 0 || reqs[0].Bulk {
		t.Fatalf("renewals before Acquire returned: %+v, want one renewal of the key", reqs)
	}
	if got, low := l.Deadline(), reqs[0].At.Add(ttl-margin-50*time.Millisecond); got.Before(low) {
		t.Errorf("deadline %v after the renewal arrived, want about TTL - margin from the renewal", got.Sub(reqs[0].At))
	}
}

func TestAcquireGivingUpReleasesALateGrant(t *testing.T) {
	f := newFakeTenure(t)
	c := newLeaseClient(t, f.URL)
	f.set(func(f *fakeTenure) { f.acquireDelay = 500 * time.Millisecond }) // granted, answered late
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Acquire(ctx, "scene-01", WithTTL(10*time.Second))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire = %v, want the context's deadline", err)
	}
	if got := f.lease("scene-01"); got.held {
		t.Errorf("the key stays held by %s (token %d) after the caller gave up, want it released", got.holder, got.token)
	}
}

func TestLeaseContextKeepsValuesNotCancellation(t *testing.T) {
	f := newFakeTenure(t)
	c := newLeaseClient(t, f.URL)
	type ctxKey struct{}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "trace-1"))
	l, err := c.Acquire(ctx, "scene-01", WithTTL(600*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := l.Err(); err != nil {
		t.Errorf("the lease ended with the context of Acquire: %v", err)
	}
	if got := l.Context().Value(ctxKey{}); got != "trace-1" {
		t.Errorf("lease context value = %v, want the value of Acquire's context", got)
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestLeaseErrSeesThePassedDeadlineItself(t *testing.T) {
	f := newFakeTenure(t)
	c := newLeaseClient(t, f.URL)
	l, err := c.Acquire(context.Background(), "scene-01", WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// As after a long pause of the process: the deadline is past, the
	// renewer has not looked yet.
	c.keep.mu.Lock()
	l.deadline = time.Now().Add(-time.Millisecond)
	c.keep.mu.Unlock()
	if err := l.Err(); !errors.Is(err, ErrLeaseExpiredLocally) {
		t.Errorf("Err = %v, want ErrLeaseExpiredLocally at once", err)
	}
	select {
	case <-l.Done():
	default:
		t.Errorf("Err saw the loss but Done is not closed")
	}
	l.Release(context.Background())
}

func TestLeaseOptionsAreValidated(t *testing.T) {
	c, _ := newTestClient(t, "127.0.0.1:1")
	tests := []struct {
		name string
		opts []LeaseOption
	}{
		{"zero TTL", []LeaseOption{WithTTL(0)}},
		{"negative wait", []LeaseOption{WithWait(-time.Second)}},
		{"margin below TTL/100", []LeaseOption{WithTTL(10 * time.Second), WithMargin(50 * time.Millisecond)}},
		{"margin above TTL/2", []LeaseOption{WithTTL(10 * time.Second), WithMargin(6 * time.Second)}},
		{"empty holder", []LeaseOption{WithHolder("")}},
		{"renew interval below TTL/20", []LeaseOption{WithTTL(10 * time.Second), WithRenewInterval(400 * time.Millisecond)}},
		{"renew interval above (TTL - margin)/2", []LeaseOption{WithTTL(10 * time.Second), WithRenewInterval(4600 * time.Millisecond)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Acquire(context.Background(), "k", tt.opts...)
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("Acquire = %v, want ErrInvalid", err)
			}
			if strings.HasPrefix(tt.name, "renew interval") && !strings.Contains(fmt.Sprint(err), "renew interval must be between TTL/20 (500ms) and (TTL − margin)/2 (4.5s)") {
				t.Errorf("Acquire = %v, want the error to name the renew interval and its bounds", err)
			}
		})
	}
}

func TestDefaultMargin(t *testing.T) {
	tests := []struct {
		ttl, want time.Duration
	}{
		{10 * time.Second, time.Second},
		{2 * time.Second, 200 * time.Millisecond},
		{500 * time.Millisecond, 100 * time.Millisecond},
		{150 * time.Millisecond, 75 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := DefaultMargin(tt.ttl); got != tt.want {
			t.Errorf("DefaultMargin(%v) = %v, want %v", tt.ttl, got, tt.want)
		}
	}
}

func TestServerWait(t *testing.T) {
	far := context.Background()
	near, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tests := []struct {
		name     string
		ctx      context.Context
		want     time.Duration
		end      time.Time
		low, top time.Duration
	}{
		{"no wait", far, 0, time.Time{}, 0, 0},
		{"forever is made of chunks", far, WaitForever, time.Time{}, waitChunk, waitChunk},
		{"what is left of the wait", far, 20 * time.Second, time.Now().Add(20 * time.Second), 19 * time.Second, 20 * time.Second},
		{"answered before the context's deadline", near, WaitForever, time.Time{}, 8 * time.Second, 9 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := serverWait(tt.ctx, tt.want, tt.end, waitChunk)
			if got < tt.low || got > tt.top {
				t.Errorf("serverWait = %v, want within [%v, %v]", got, tt.low, tt.top)
			}
		})
	}
}

func TestWaitingAcquireFitsTheServersMaxWait(t *testing.T) {
	// A server whose -max-wait is 20s refuses longer waits with
	// invalid_wait, and grants the key at the third request.
	var (
		mu    sync.Mutex
		waits []string
	)
	var srv *fakeServer
	srv = newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.Method != http.MethodPut {
			writeJSON(w, 200, testLease("k"))
			return
		}
		var body struct{ Wait string }
		json.Unmarshal([]byte(srv.requests()[n-1].Body), &body)
		mu.Lock()
		waits = append(waits, body.Wait)
		i := len(waits)
		mu.Unlock()
		d, _ := time.ParseDuration(body.Wait)
		switch {
		case d > 20*time.Second:
			writeJSON(w, 400, map[string]any{"error": wire.CodeInvalidWait, "field": "wait", "message": "wait above max-wait 20s"})
		case i < 3:
			writeJSON(w, 409, map[string]any{"error": wire.CodeHeld, "message": "held"})
		default:
			writeJSON(w, 201, testLease("k"))
		}
	})
	c := newLeaseClient(t, srv.URL)
	c.sleep = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	l, err := c.Acquire(context.Background(), "k", WithWait(WaitForever))
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	l.Release(context.Background())
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"1m0s", "30s", "15s"}; !slices.Equal(waits, want) {
		t.Errorf("waits asked = %v, want %v: halved until the server takes them", waits, want)
	}
}

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

// The keep-alive reports each lease's load and the holder's total on its
// renewals; a server older than load reports refuses them, and the lease
// is renewed without them, not lost, and no load is reported again.
func TestKeepAliveReportsLoadsAndDropsThemWhenRefused(t *testing.T) {
	f := newFakeTenure(t)
	c := newLeaseClient(t, f.hostPort())
	ctx := context.Background()
	lease, err := c.Acquire(ctx, "k", WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.ReportLoad(12.5); err != nil {
		t.Fatal(err)
	}
	if err := c.ReportHolderLoad(lease.Holder(), 40); err != nil {
		t.Fatal(err)
	}
	if err := c.ReportHolderLoad("nobody", 1); !errors.Is(err, ErrInvalid) {
		t.Errorf("ReportHolderLoad of a holder without a lease = %v, want ErrInvalid", err)
	}
	if err := lease.ReportLoad(math.NaN()); !errors.Is(err, ErrInvalid) {
		t.Errorf("ReportLoad(NaN) = %v, want ErrInvalid", err)
	}
	reported := func() (fakeRenew, bool) {
		for _, r := range f.renewRequests() {
			if r.Bulk && r.Loads != nil {
				return r, true
			}
		}
		return fakeRenew{}, false
	}
	waitUntil(t, 5*time.Second, "a renewal that reports a load", func() bool { _, ok := reported(); return ok })
	if r, _ := reported(); r.Loads["k"] != 12.5 || r.Total == nil || *r.Total != 40 {
		t.Errorf("renewal reported loads %v and total %v, want k: 12.5 and 40", r.Loads, r.Total)
	}
	f.set(func(f *fakeTenure) { f.refuseLoads = true })
	refusedAt := len(f.renewRequests())
	var refused, plain int
	waitUntil(t, 5*time.Second, "a refused renewal, then two without loads", func() bool {
		refused, plain = 0, 0
		for _, r := range f.renewRequests()[refusedAt:] {
			switch {
			case r.Loads != nil || r.Total != nil:
				refused++
			case r.OK:
				plain++
			}
		}
		return refused > 0 && plain >= 2
	})
	if refused > 1 {
		t.Errorf("%d renewals reported loads after the first refusal, want 1", refused)
	}
	if err := lease.Err(); err != nil {
		t.Errorf("the lease ended after the server refused its load: %v", err)
	}
	// The holder's total goes with its last lease.
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c.keep.mu.Lock()
	totals := len(c.keep.totals)
	c.keep.mu.Unlock()
	if totals != 0 {
		t.Errorf("%d holder totals kept after the holder's last lease ended, want 0", totals)
	}
}
