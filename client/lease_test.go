package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
