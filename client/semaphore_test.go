package client

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSemaphoreTakesOneSlotEach(t *testing.T) {
	f := newFakeTenure(t)
	ctx := context.Background()
	const ttl = 900 * time.Millisecond
	a := newCandidate(t, f, "job-a")
	b := newCandidate(t, f, "job-b")
	c := newCandidate(t, f, "job-c")

	// takes acquires a slot for who, which must be the first free one.
	takes := func(who string, cl *Client, want string) *Lease {
		t.Helper()
		l, err := cl.AcquireSemaphore(ctx, "nightly", 2, WithTTL(ttl))
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		if l.Key() != want {
			t.Errorf("%s got %s, want the first free slot %s", who, l.Key(), want)
		}
		return l
	}
	la := takes("a", a, "nightly/slot-0")
	if _, err := a.AcquireSemaphore(ctx, "nightly", 2, WithTTL(ttl)); !errors.Is(err, ErrDuplicateLease) {
		t.Errorf("a again = %v, want ErrDuplicateLease (one slot per holder)", err)
	}
	lb := takes("b", b, "nightly/slot-1")
	if _, err := c.AcquireSemaphore(ctx, "nightly", 2, WithTTL(ttl)); !errors.Is(err, ErrHeld) {
		t.Errorf("c without waiting = %v, want ErrHeld", err)
	}

	type result struct {
		l   *Lease
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := c.AcquireSemaphore(ctx, "nightly", 2, WithTTL(ttl), WithWait(5*time.Second))
		got <- result{l, err}
	}()
	select {
	case r := <-got:
		t.Fatalf("c got a slot while both are held: %+v", r)
	case <-time.After(500 * time.Millisecond):
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("c waiting: %v", r.err)
	}
	if r.l.Key() != "nightly/slot-1" {
		t.Errorf("c got %s, want the slot b released", r.l.Key())
	}
	// c queued on both slots; it must hold only the one it got.
	waitUntil(t, 2*time.Second, "c to hold exactly one slot", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := 0
		for _, l := range f.leases {
			if l.held && l.holder == "job-c" {
				n++
			}
		}
		return n == 1
	})
	la.Release(ctx)
	r.l.Release(ctx)
}

func TestSemaphoreRefusesBadSlots(t *testing.T) {
	c, _ := newTestClient(t, "127.0.0.1:1")
	for _, n := range []int{0, -1, MaxSemaphoreSlots + 1} {
		if _, err := c.AcquireSemaphore(context.Background(), "k", n); !errors.Is(err, ErrInvalid) {
			t.Errorf("%d slots: %v, want ErrInvalid", n, err)
		}
	}
}
