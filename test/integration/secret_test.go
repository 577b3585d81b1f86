package integration

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/test/harness"
)

// Two processes given one holder name (a restart with a fixed name, or a
// copy-paste) no longer share a lease: each Go client has its own lease
// secret, so the second is held off while the first holds the key, cannot
// renew or release the first's lease with its name and token, and gets
// the key with a newer token once the first lets it go. The first's
// keep-alive and Release work as ever, without any code about secrets.
func TestGoClientsSharingAHolderDoNotShareALease(t *testing.T) {
	c := startCluster(t, 3)
	first := c.newClient(t, "worker-1")
	second := c.newClient(t, "worker-1")
	ctx := harness.Context(t, 30*time.Second)

	var renewals atomic.Int32
	l, err := first.Acquire(ctx, "jobs/nightly", client.WithTTL(3*time.Second),
		client.WithHooks(client.Hooks{OnRenewed: func(*client.Lease, time.Duration) { renewals.Add(1) }}))
	if err != nil {
		t.Fatalf("first acquire: %v", err)
	}
	if _, err := second.Acquire(ctx, "jobs/nightly", client.WithTTL(3*time.Second)); !errors.Is(err, client.ErrHeld) {
		t.Fatalf("second client's acquire under the same holder = %v, want %v", err, client.ErrHeld)
	}
	if _, _, err := second.Leases().Renew(ctx, "jobs/nightly", "worker-1", l.Token()); !errors.Is(err, client.ErrWrongSecret) {
		t.Fatalf("second client's renewal = %v, want %v", err, client.ErrWrongSecret)
	}
	if _, err := second.Leases().Release(ctx, "jobs/nightly", "worker-1", l.Token()); !errors.Is(err, client.ErrWrongSecret) {
		t.Fatalf("second client's release = %v, want %v", err, client.ErrWrongSecret)
	}
	// The first keeps its lease over more than a TTL of renewals.
	harness.WaitUntil(t, 10*time.Second, "four renewals of the first client's lease", func() bool {
		if err := l.Err(); err != nil {
			t.Fatalf("the first client's lease ended: %v", err)
		}
		return renewals.Load() >= 4
	})
	if err := l.Release(ctx); err != nil {
		t.Fatalf("first release: %v", err)
	}
	next, err := second.Acquire(ctx, "jobs/nightly", client.WithTTL(3*time.Second))
	if err != nil {
		t.Fatalf("second acquire after the release: %v", err)
	}
	defer next.Release(ctx)
	if next.Token() <= l.Token() {
		t.Fatalf("second client's lease has token %d, want above the first's %d", next.Token(), l.Token())
	}
}
