package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
)

// catchUp is how long after a renewal the page may still show the
// deadline before it: the leases view takes the times left again every
// half second while it shows held leases.
const catchUp = 800 * time.Millisecond

// expiresFollowsTheLeader checks, over three TTLs of a holder that keeps
// renewing key, that the time left the leases view shows for it stays
// within a second of the time left the leader answers through the API,
// or is again within catchUp.
// Renewals write no log entry, so a page that only waits for the list's
// index to move shows the deadline it read first and runs it down to 0s
// while the lease is healthy.
func expiresFollowsTheLeader(t *testing.T, b *browser, cl *client.Client, key string, ttl time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*ttl+30*time.Second)
	defer cancel()
	var off []string
	var worst time.Duration
	samples := 0
	// sample reads the page, the leader, the page again: how far the
	// leader's answer, which lies between the two readings, is from the
	// nearer one.
	sample := func() (time.Duration, string) {
		before := pageTimeLeft(t, b, key)
		l, _, err := cl.Leases().Get(ctx, key, nil)
		after := pageTimeLeft(t, b, key)
		if err != nil {
			t.Fatalf("get %s: %v", key, err)
		}
		if l.State != client.StateHeld || !l.HasExpiresIn {
			t.Fatalf("%s while its holder renews it: %+v, want held with the leader's time left", key, l)
		}
		d := min((before - l.ExpiresIn).Abs(), (after - l.ExpiresIn).Abs())
		return d, fmt.Sprintf("page %v and %v, leader %v", before, after, l.ExpiresIn)
	}
	for end := time.Now().Add(3 * ttl); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		d, what := sample()
		if d > time.Second {
			// A renewal moves the leader's deadline at once and the page's
			// within its next read, half a second on: it must have
			// caught up by then.
			time.Sleep(catchUp)
			d, what = sample()
		}
		worst = max(worst, d)
		samples++
		if d > time.Second {
			off = append(off, what)
		}
	}
	t.Logf("the time left on %s on the page was at most %v from the leader's over %d samples in %v", key, worst.Round(time.Millisecond), samples, 3*ttl)
	if len(off) > 0 {
		t.Errorf("the time left on %s on the page was more than a second from the leader's in %d of %d samples: %s", key, len(off), samples, strings.Join(off, "; "))
	}
}

// pageTimeLeft reads the time left the leases view shows for key.
func pageTimeLeft(t *testing.T, b *browser, key string) time.Duration {
	t.Helper()
	text, err := eval[string](b, leaseRow(key)+`?.querySelector('td.expires')?.textContent ?? ''`)
	if err != nil {
		t.Fatalf("read the time left on %s: %v", key, err)
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		t.Fatalf("the time left on %s reads %q: %v", key, text, err)
	}
	return d
}
