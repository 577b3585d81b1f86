package client

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestFenceValidatorCheck(t *testing.T) {
	// Each case starts from a validator that has confirmed token 5 for
	// scene-01 (a read), at the refresh age given.
	tests := []struct {
		name      string
		current   uint64        // the server's latest token when the case runs
		age       time.Duration // of the cached entry
		key       string
		token     uint64
		wantErr   error
		wantReads int
	}{
		{"the current token, cached", 5, 0, "scene-01", 5, nil, 0},
		{"a token below the cached one is refused without a read", 9, 0, "scene-01", 4, ErrStaleToken, 0},
		{"a cached token confirmed again once the entry is old", 5, 2 * time.Second, "scene-01", 5, nil, 1},
		{"an old entry superseded since", 6, 2 * time.Second, "scene-01", 5, ErrStaleToken, 1},
		{"a newer token makes it read, and is the current one", 6, 0, "scene-01", 6, nil, 1},
		{"a token never granted for the key", 6, 0, "scene-01", 7, ErrStaleToken, 1},
		{"a key not cached is read", 5, 0, "scene-02", 3, nil, 1},
		{"a key never acquired", 5, 0, "scene-03", 1, ErrStaleToken, 1},
		{"token 0", 5, 0, "scene-01", 0, ErrInvalid, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeTenure(t)
			f.set(func(f *fakeTenure) {
				f.leases["scene-01"] = &fakeLease{holder: "tracker-0", token: 5, held: true, index: 2}
				f.leases["scene-02"] = &fakeLease{holder: "tracker-1", token: 3, held: false, reason: ReasonReleased, index: 3}
			})
			c := newLeaseClient(t, f.URL)
			v := NewFenceValidator(c)
			ctx := context.Background()
			if err := v.Check(ctx, "scene-01", 5); err != nil {
				t.Fatalf("first Check: %v", err)
			}
			v.mu.Lock()
			v.entries["scene-01"].readAt = v.entries["scene-01"].readAt.Add(-tt.age)
			v.mu.Unlock()
			f.set(func(f *fakeTenure) {
				l := f.leases["scene-01"]
				l.token, l.holder = tt.current, "tracker-1"
			})
			before := f.count()

			err := v.Check(ctx, tt.key, tt.token)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("Check(%s, %d) = %v, want %v", tt.key, tt.token, err, tt.wantErr)
			}
			if reads := f.count() - before; reads != tt.wantReads {
				t.Errorf("Check made %d reads, want %d", reads, tt.wantReads)
			}
		})
	}
}

func TestFenceValidatorSharesConcurrentReads(t *testing.T) {
	f := newFakeTenure(t)
	release := make(chan struct{})
	f.set(func(f *fakeTenure) {
		f.leases["scene-01"] = &fakeLease{holder: "tracker-0", token: 5, held: true, index: 2}
	})
	slow := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		<-release
		writeJSON(w, 200, map[string]any{"key": "scene-01", "holder": "tracker-0", "token": 5, "state": "held"})
	})
	c := newLeaseClient(t, slow.URL)
	v := NewFenceValidator(c)
	errs := make(chan error, 8)
	for range 8 {
		go func() { errs <- v.Check(context.Background(), "scene-01", 5) }()
	}
	waitUntil(t, 2*time.Second, "the first read", func() bool { return slow.count() == 1 })
	close(release)
	for range 8 {
		if err := <-errs; err != nil {
			t.Errorf("Check: %v", err)
		}
	}
	if n := slow.count(); n != 1 {
		t.Errorf("8 concurrent checks made %d reads, want 1", n)
	}
}

// WithCacheWhenUnreachable decides from the cache while the cluster cannot
// be reached, and only then: the cached latest token within its age is
// accepted, a lower one refused, a higher one or an entry too old left
// undecided. Without the option nothing is decided while the cluster is
// unreachable.
func TestFenceValidatorCachedWhenUnreachable(t *testing.T) {
	f := newFakeTenure(t)
	f.set(func(f *fakeTenure) {
		f.leases["scene-01"] = &fakeLease{holder: "tracker-0", token: 5, held: true, index: 2}
	})
	c := newLeaseClient(t, f.URL)
	c.cfg.Timeout = 200 * time.Millisecond // a short failover retry
	ctx := context.Background()
	cached := NewFenceValidator(c, WithRefreshAfter(0), WithCacheWhenUnreachable(time.Minute))
	plain := NewFenceValidator(c, WithRefreshAfter(0))
	for _, v := range []*FenceValidator{cached, plain} {
		if err := v.Check(ctx, "scene-01", 5); err != nil {
			t.Fatalf("Check while the cluster answers: %v", err)
		}
	}
	f.Close() // connections refused from now on

	if err := cached.Check(ctx, "scene-01", 5); err != nil {
		t.Errorf("cached Check of the cached token = %v, want nil", err)
	}
	if err := cached.Check(ctx, "scene-01", 4); !errors.Is(err, ErrStaleToken) {
		t.Errorf("cached Check of a lower token = %v, want ErrStaleToken", err)
	}
	if err := cached.Check(ctx, "scene-01", 6); err == nil || errors.Is(err, ErrStaleToken) {
		t.Errorf("cached Check of a higher token = %v, want an undecided error", err)
	}
	if err := plain.Check(ctx, "scene-01", 5); err == nil || errors.Is(err, ErrStaleToken) {
		t.Errorf("Check without the option = %v, want an undecided error", err)
	}
	cached.mu.Lock()
	cached.entries["scene-01"].readAt = cached.entries["scene-01"].readAt.Add(-time.Minute)
	cached.mu.Unlock()
	if err := cached.Check(ctx, "scene-01", 5); err == nil || errors.Is(err, ErrStaleToken) {
		t.Errorf("cached Check of an entry older than its age = %v, want an undecided error", err)
	}
	for _, age := range []time.Duration{-time.Second, MaxFenceCacheAge + time.Second} {
		err := NewFenceValidator(c, WithCacheWhenUnreachable(age)).Check(ctx, "scene-01", 5)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "WithCacheWhenUnreachable") {
			t.Errorf("age %v: Check = %v, want ErrInvalid naming the option", age, err)
		}
	}
}
