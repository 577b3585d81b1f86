package httpapi

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// watchClient is a client of every node of c that retries long enough to
// ride out a failover.
func watchClient(t *testing.T, c *testCluster) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	for _, n := range c.nodes {
		cfg.Addresses = append(cfg.Addresses, n.url)
	}
	cfg.Timeout = 5 * time.Second
	cfg.RetryMax = 50
	cfg.RetryBaseDelay = 20 * time.Millisecond
	cfg.RetryMaxDelay = 200 * time.Millisecond
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// change is an event as the test expects it.
type change struct {
	Type, Key, Holder string
	Token             uint64
}

// TestWatchAcrossFailoverAndRestart: a watcher sees every change the test
// makes, in order, once each, with no gap, while the leader is stopped
// (a failover), comes back, and a follower restarts; every node then
// holds the same events for the same indexes.
func TestWatchAcrossFailoverAndRestart(t *testing.T) {
	c := startCluster(t, 3)
	cl := watchClient(t, c)
	ctx := harness.Context(t, 2*time.Minute)
	_, from, err := cl.Events().List(ctx, client.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	watch := cl.Events().Watch(watchCtx, from, client.EventFilter{Prefix: "w/", WaitTime: 300 * time.Millisecond})

	var want []change
	op := 0
	// burst acquires and releases keys, recording the events they make. A
	// retry after an unknown outcome makes no second event: acquire and
	// release are idempotent.
	burst := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			op++
			key, holder := fmt.Sprintf("w/%03d", op), fmt.Sprintf("h%d", op%3)
			l, _, err := cl.Leases().Acquire(ctx, key, client.AcquireRequest{Holder: holder, TTL: time.Minute})
			if err != nil {
				t.Fatalf("acquire %s: %v", key, err)
			}
			want = append(want, change{client.EventAcquired, key, holder, l.Token})
			if op%2 == 0 {
				if _, err := cl.Leases().Release(ctx, key, holder, l.Token); err != nil {
					t.Fatalf("release %s: %v", key, err)
				}
				want = append(want, change{client.EventReleased, key, holder, l.Token})
			}
		}
	}
	burst(10)
	old := c.cluster.Leader()
	c.cluster.Stop(old) // failover
	burst(10)
	c.cluster.Restart(old)
	burst(10)
	follower := (c.cluster.Leader() + 1) % 3
	c.cluster.Stop(follower) // a server restart
	burst(5)
	c.cluster.Restart(follower)
	burst(5)

	var got []client.Event
	deadline := time.After(30 * time.Second)
	for len(got) < len(want) {
		select {
		case resp, ok := <-watch:
			if !ok || resp.Err != nil {
				t.Fatalf("watch ended after %d of %d events: %v", len(got), len(want), resp.Err)
			}
			got = append(got, resp.Events...)
		case <-deadline:
			t.Fatalf("watch delivered %d of %d events", len(got), len(want))
		}
	}
	var seen []change
	for i, e := range got {
		if i > 0 && e.Index < got[i-1].Index { // one entry's events share an index
			t.Errorf("event %d at index %d follows index %d", i, e.Index, got[i-1].Index)
		}
		seen = append(seen, change{e.Type, e.Key, e.Holder, e.Token})
	}
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("watched:\n%v\nwant:\n%v", seen, want)
	}
	select {
	case resp := <-watch:
		t.Fatalf("watch delivered more than the test did: %+v", resp)
	case <-time.After(500 * time.Millisecond):
	}

	// Same events on every node, for the same indexes, the restarted ones
	// included (rebuilt from their logs).
	for _, n := range c.nodes {
		var evs []client.Event
		harness.WaitUntil(t, 10*time.Second, n.id+" to apply everything", func() bool {
			r, err := send("GET", n.url+"/v1/events?prefix=w/&wait=0s&index="+strconv.FormatUint(from, 10), "", nil)
			if err != nil || r.status != 200 {
				return false
			}
			var list wire.EventList
			r.decode(t, &list)
			evs = list.Events
			return len(evs) == len(got)
		})
		if !reflect.DeepEqual(evs, got) {
			t.Errorf("node %s has other events than the watcher saw:\n%+v\nwant\n%+v", n.id, evs, got)
		}
	}
}

// TestWatchFallsBehind: a watcher that does not keep up with a small
// history ends with ErrCompacted, naming the oldest index still served.
func TestWatchFallsBehind(t *testing.T) {
	c := startClusterWith(t, 1, inproc.Options{TCP: true, Serve: serveAPI, Tweak: func(cfg *cluster.Config) {
		cfg.EventHistory = 4
	}})
	cl := watchClient(t, c)
	ctx := harness.Context(t, time.Minute)
	_, from, err := cl.Events().List(ctx, client.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	watch := cl.Events().Watch(ctx, from, client.EventFilter{WaitTime: 200 * time.Millisecond})
	acquire := func(key string) {
		if _, _, err := cl.Leases().Acquire(ctx, key, client.AcquireRequest{Holder: "h", TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	acquire("first")
	first := <-watch
	if len(first.Events) != 1 || first.Events[0].Key != "first" {
		t.Fatalf("first delivery %+v, want the acquire of first", first)
	}
	// The watcher does not read while ten more changes push its position
	// out of a history of four.
	for i := 0; i < 10; i++ {
		acquire(fmt.Sprintf("k%d", i))
	}
	var last client.WatchResponse
	for resp := range watch {
		last = resp
	}
	var ae *client.APIError
	if !errors.Is(last.Err, client.ErrCompacted) || !errors.As(last.Err, &ae) || ae.OldestIndex <= first.Index {
		t.Fatalf("watch ended with %+v, want ErrCompacted with an oldest index above %d", last, first.Index)
	}
}
