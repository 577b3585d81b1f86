package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/test/harness"
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
	var worstWhat string
	samples := 0
	// sample reads the page, the leader, the page again, and compares
	// the leader's answer with what each reading of the page, counted
	// down to the middle of the leader's call, says then (on a busy
	// machine the call may take a good part of a second): how far it is
	// from the nearer.
	sample := func() (time.Duration, string) {
		t1 := time.Now()
		before := pageTimeLeft(t, b, key)
		t2 := time.Now()
		l, _, err := cl.Leases().Get(ctx, key, nil)
		t3 := time.Now()
		after := pageTimeLeft(t, b, key)
		t4 := time.Now()
		if err != nil {
			t.Fatalf("get %s: %v", key, err)
		}
		if l.State != client.StateHeld || !l.HasExpiresIn {
			t.Fatalf("%s while its holder renews it: %+v, want held with the leader's time left", key, l)
		}
		mid := t2.Add(t3.Sub(t2) / 2)
		atMid := []time.Duration{before - mid.Sub(t1.Add(t2.Sub(t1)/2)), after + t3.Add(t4.Sub(t3)/2).Sub(mid)}
		d := min((atMid[0] - l.ExpiresIn).Abs(), (atMid[1] - l.ExpiresIn).Abs())
		return d, fmt.Sprintf("page %v and %v (%v and %v at the leader's answer), leader %v",
			before, after, atMid[0].Round(time.Millisecond), atMid[1].Round(time.Millisecond), l.ExpiresIn)
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
		if d > worst {
			worst, worstWhat = d, what
		}
		samples++
		if d > time.Second {
			off = append(off, what)
		}
	}
	t.Logf("the time left on %s on the page was at most %v from the leader's over %d samples in %v (%s)", key, worst.Round(time.Millisecond), samples, 3*ttl, worstWhat)
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

// TestPageTimeLeftAtScale: with 1,500 leases held and renewed (more than
// the 1,000 rows the leases view shows), the time left of a renewed lease
// on the page stays that of the leader over three TTLs, as with one.
func TestPageTimeLeftAtScale(t *testing.T) {
	needChromium(t)
	d := startDev(t, "-min-ttl", "1s")
	cfg := client.DefaultConfig()
	cfg.Addresses, cfg.Holder, cfg.Timeout = []string{d.httpAddr}, "bulk-holder", 5*time.Second
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := harness.Context(t, 2*time.Minute)
	const n, ttl = 1500, 5 * time.Second
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				l, err := cl.Acquire(ctx, fmt.Sprintf("bulk/%04d", i), client.WithTTL(ttl))
				if err != nil {
					errs <- err
					return
				}
				t.Cleanup(func() { l.Release(context.Background()) })
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("acquire: %v", err)
	}
	b := newBrowser(t)
	b.run(chromedp.Navigate("http://"+d.httpAddr+"/ui#leases"), chromedp.WaitVisible(chromedp.ID("view-leases")))
	b.waitTrue(10*time.Second, "the leases view shows its 1,000 rows and says more follow",
		`document.querySelectorAll('#leases tbody tr[data-key]').length === 1000 && document.getElementById('lease-count').textContent === '1000+ leases'`)
	expiresFollowsTheLeader(t, b, cl, "bulk/0999", ttl)
}
