package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

func (r reply) events(t *testing.T) wire.EventList {
	t.Helper()
	var out wire.EventList
	r.decode(t, &out)
	return out
}

func eventTypes(evs []client.Event) string {
	var parts []string
	for _, e := range evs {
		parts = append(parts, e.Type+" "+e.Key+e.Group+e.Worker)
	}
	return strings.Join(parts, ", ")
}

// TestEventsRoute: the route lists what happened after an index, in order,
// on any node, filtered by prefix and type; with an index it blocks until
// something happens.
func TestEventsRoute(t *testing.T) {
	c := startCluster(t, 3)
	leader, follower := c.follower()
	r := do(t, "GET", leader.url+"/v1/events", "")
	r.wantStatus(t, "events", 200)
	start := r.events(t).Index

	write(t, "", "PUT", leader.url+"/v1/leases/jobs/a", `{"holder":"h1","ttl":"30s"}`).wantGranted(t)
	write(t, "", "DELETE", leader.url+"/v1/leases/jobs/a?holder=h1&token=1", "").wantStatus(t, "release", 204)
	write(t, "", "PUT", leader.url+"/v1/leases/other", `{"holder":"h1","ttl":"30s"}`).wantGranted(t)
	write(t, "", "PUT", leader.url+"/v1/controls/jobs/b?force=true", `{"disabled":true}`).wantStatus(t, "control", 200)
	write(t, "", "POST", leader.url+"/v1/workers/w1/drain?force=true", "").wantStatus(t, "drain", 200)

	r = do(t, "GET", leader.url+"/v1/events?index="+strconv.FormatUint(start, 10), "")
	r.wantStatus(t, "events", 200)
	all := r.events(t)
	if got, want := eventTypes(all.Events), "acquired jobs/a, released jobs/a, acquired other, control_changed jobs/b, drained w1"; got != want {
		t.Fatalf("events = %s\nwant     %s", got, want)
	}
	for i, e := range all.Events {
		if i > 0 && e.Index <= all.Events[i-1].Index {
			t.Errorf("event %d at index %d after index %d", i, e.Index, all.Events[i-1].Index)
		}
		if e.Term == 0 {
			t.Errorf("event %d has no term", i)
		}
		// The time the leader committed it: a moment ago, in order.
		if time.Since(e.Time).Abs() > time.Minute || i > 0 && e.Time.Before(all.Events[i-1].Time) {
			t.Errorf("event %d carries the time %v, want its commit's, a moment ago and not before the last event's", i, e.Time)
		}
	}
	if all.Events[0].Holder != "h1" || all.Events[0].Token != 1 || all.Index < all.Events[4].Index {
		t.Errorf("first event %+v, answer index %d", all.Events[0], all.Index)
	}
	// A follower answers the same events for the same indexes.
	harness.WaitUntil(t, 10*time.Second, "the follower to apply the drain", func() bool {
		r := do(t, "GET", follower.url+"/v1/events?index="+strconv.FormatUint(start, 10)+"&wait=1ms", "")
		return len(r.events(t).Events) == 5
	})
	r = do(t, "GET", follower.url+"/v1/events?index="+strconv.FormatUint(start, 10), "")
	if got := r.events(t); fmt.Sprint(got.Events) != fmt.Sprint(all.Events) {
		t.Errorf("follower's events differ:\n%+v\nleader's:\n%+v", got.Events, all.Events)
	}
	if r.header.Get(client.HeaderIndex) == "" || r.header.Get(client.HeaderLastContact) == "" {
		t.Errorf("answer lacks the stale-read headers: %v", r.header)
	}
	// Filters.
	r = do(t, "GET", leader.url+"/v1/events?prefix=jobs/&type=acquired,control_changed&index="+strconv.FormatUint(start, 10), "")
	if got := eventTypes(r.events(t).Events); got != "acquired jobs/a, control_changed jobs/b" {
		t.Errorf("prefix jobs/, types acquired,control_changed: %s", got)
	}
	r = do(t, "GET", leader.url+"/v1/events?type=released&type=drained&index="+strconv.FormatUint(start, 10), "")
	if got := eventTypes(r.events(t).Events); got != "released jobs/a, drained w1" {
		t.Errorf("types released and drained: %s", got)
	}
	r = do(t, "GET", leader.url+"/v1/events?limit=2&index="+strconv.FormatUint(start, 10), "")
	if got := r.events(t); len(got.Events) != 2 || got.Index != got.Events[1].Index {
		t.Errorf("limit 2: %d events, index %d; want 2, the second's index", len(got.Events), got.Index)
	}

	// Blocking: nothing after the last index until a change comes.
	last := all.Index
	done := make(chan reply, 1)
	go func() {
		r, err := send("GET", follower.url+"/v1/events?wait=20s&index="+strconv.FormatUint(last, 10), "", nil)
		if err != nil {
			r.body = []byte(err.Error())
		}
		done <- r
	}()
	select {
	case r := <-done:
		t.Fatalf("answered before anything happened: %s", r.body)
	case <-time.After(300 * time.Millisecond):
	}
	write(t, "", "POST", leader.url+"/v1/revoke/other", "").wantStatus(t, "revoke", 200)
	r = <-done
	r.wantStatus(t, "blocking events", 200)
	if got := eventTypes(r.events(t).Events); got != "ending other" {
		t.Errorf("blocking answer: %s, want the revoke", got)
	}
	// A wait that ends with nothing answers the index to ask after again.
	r = do(t, "GET", leader.url+"/v1/events?wait=50ms&index="+strconv.FormatUint(r.events(t).Index, 10), "")
	if got := r.events(t); len(got.Events) != 0 || got.Index == 0 {
		t.Errorf("empty wait: %+v", got)
	}
}

// TestEventsBadQuery: every bad parameter is named.
func TestEventsBadQuery(t *testing.T) {
	n := startNode(t)
	checkRefusals(t, n.url, []refusal{
		{"index=x", "GET", "/v1/events?index=x", "", 400, wire.CodeInvalidIndex, "index", ""},
		{"index empty", "GET", "/v1/events?index=", "", 400, wire.CodeInvalidIndex, "index", ""},
		{"type=acquired,nope", "GET", "/v1/events?type=acquired,nope", "", 400, wire.CodeInvalidQuery, "type", ""},
		{"limit=0", "GET", "/v1/events?limit=0", "", 400, wire.CodeInvalidQuery, "limit", ""},
		{"limit=1001", "GET", "/v1/events?limit=1001", "", 400, wire.CodeInvalidQuery, "limit", ""},
		{"wait=forever", "GET", "/v1/events?wait=forever", "", 400, wire.CodeInvalidWait, "wait", ""},
		{"prefix of 300 bytes", "GET", "/v1/events?prefix=" + strings.Repeat("p", 300), "", 400, wire.CodeInvalidPrefix, "prefix", ""},
	})
}

// TestEventsCompacted: a reader older than a node's history gets 410
// compacted with the oldest index it may ask for.
func TestEventsCompacted(t *testing.T) {
	c := startClusterWith(t, 1, inproc.Options{TCP: true, Serve: serveAPI, Tweak: func(cfg *cluster.Config) {
		cfg.EventHistory = 3
	}})
	n := c.leader()
	for i := 0; i < 6; i++ {
		write(t, "", "PUT", n.url+fmt.Sprintf("/v1/leases/k%d", i), `{"holder":"h","ttl":"30s"}`).wantGranted(t)
	}
	r := do(t, "GET", n.url+"/v1/events?index=1", "")
	r.wantStatus(t, "old index", http.StatusGone)
	var body wire.CompactedBody
	sameJSON(t, "410 compacted", r.body, &body) // the answer is the client's type, field for field
	if body.Error != wire.CodeCompacted || body.OldestIndex <= 1 || r.header.Get(client.HeaderOldestIndex) != strconv.FormatUint(body.OldestIndex, 10) {
		t.Fatalf("410 answer %s, headers %v; want code compacted with the oldest index in body and header", r.body, r.header)
	}
	r = do(t, "GET", n.url+"/v1/events?index="+strconv.FormatUint(body.OldestIndex, 10), "")
	r.wantStatus(t, "oldest index", 200)
	if got := r.events(t); len(got.Events) != 3 {
		t.Errorf("from the oldest index: %s, want the 3 events kept", eventTypes(got.Events))
	}
}

// TestEventsACL: with ACLs on, a token sees the events of the keys it may
// read only; operator commands name the accessor of the token that made
// them, or anonymous.
func TestEventsACL(t *testing.T) {
	e := startACL(t, 3)
	leader, follower := e.follower()
	e.policy(t, "jobs-read", rule("jobs/", client.RightRead))
	e.policy(t, "ops", rule("", client.RightRevoke, client.RightGroups, client.RightWrite))
	reader := e.token(t, client.ACLTokenSpec{Policies: []string{"jobs-read"}})
	op := e.token(t, client.ACLTokenSpec{Policies: []string{"ops"}})
	r := doAs(t, e.boot, "GET", leader.url+"/v1/events", "")
	r.wantStatus(t, "events", 200)
	start := strconv.FormatUint(r.events(t).Index, 10)

	write(t, op.SecretID, "PUT", follower.url+"/v1/leases/jobs/a", `{"holder":"h1","ttl":"30s"}`).wantGranted(t)
	write(t, op.SecretID, "PUT", follower.url+"/v1/leases/secret/b", `{"holder":"h1","ttl":"30s"}`).wantGranted(t)
	write(t, op.SecretID, "POST", follower.url+"/v1/revoke/jobs/a", "").wantStatus(t, "revoke", 200)
	write(t, op.SecretID, "PUT", leader.url+"/v1/groups/jobs-g", `{"keys":["jobs/x"]}`).wantStatus(t, "group", 200)
	write(t, op.SecretID, "POST", leader.url+"/v1/workers/w1/drain?force=true", "").wantStatus(t, "drain", 200)

	r = doAs(t, e.boot, "GET", leader.url+"/v1/events?index="+start, "")
	all := r.events(t)
	if got, want := eventTypes(all.Events), "acquired jobs/a, acquired secret/b, ending jobs/a, group_changed jobs-g, drained w1"; got != want {
		t.Fatalf("management token sees %s\nwant %s", got, want)
	}
	for _, ev := range all.Events {
		want := op.AccessorID
		if ev.Type == "acquired" {
			want = "" // a holder's own acquire names the holder, not an operator
		}
		if ev.By != want {
			t.Errorf("%s %s: by %q, want %q", ev.Type, ev.Key, ev.By, want)
		}
	}
	// The reader sees jobs/ only; events of other keys, groups it cannot
	// read and workers are left out. It must name a prefix it may read.
	doAs(t, reader.SecretID, "GET", leader.url+"/v1/events?index="+start, "").wantDenied(t, "events without a prefix", wire.CodePermissionDenied)
	// On the follower, once it has applied the leader's last entry (a
	// follower's events may trail the leader's by the entries it has not
	// applied yet).
	got := ""
	harness.WaitUntil(t, 10*time.Second, "the follower to apply the drain", func() bool {
		r := doAs(t, reader.SecretID, "GET", follower.url+"/v1/events?prefix=jobs/&index="+start, "")
		r.wantStatus(t, "reader's events", 200)
		ev := r.events(t)
		got = eventTypes(ev.Events)
		return ev.Index >= all.Index
	})
	if got != "acquired jobs/a, ending jobs/a" {
		t.Errorf("reader sees %s, want the jobs/a events only", got)
	}
	// A blocking reader is not woken by what it may not see.
	last := strconv.FormatUint(all.Index, 10)
	write(t, op.SecretID, "PUT", leader.url+"/v1/leases/secret/c", `{"holder":"h1","ttl":"30s"}`).wantGranted(t)
	r = doAs(t, reader.SecretID, "GET", leader.url+"/v1/events?prefix=jobs/&wait=200ms&index="+last, "")
	if got := r.events(t); len(got.Events) != 0 || got.Index <= all.Index {
		t.Errorf("reader after a hidden change: %s, index %d; want nothing and an index past %d", eventTypes(got.Events), got.Index, all.Index)
	}
}

// write makes a write request as secret ("" for none), retrying while the
// cluster answers 503 (no leader, or a leader lost while the request was
// in flight: acquire, release, revoke and the operator writes here are
// idempotent, so a retry makes no second event).
func write(t *testing.T, secret, method, url, body string) reply {
	t.Helper()
	var r reply
	harness.WaitUntil(t, 20*time.Second, method+" "+url+" without a 503", func() bool {
		r = doAs(t, secret, method, url, body)
		return r.status != http.StatusServiceUnavailable
	})
	return r
}

// wantGranted fails unless r granted a lease: 201, or 200 when a retry
// found the lease its first attempt had granted.
func (r reply) wantGranted(t *testing.T) {
	t.Helper()
	if r.status != http.StatusCreated && r.status != http.StatusOK {
		t.Fatalf("acquire: status %d, want 201 (or 200 after a retry): %s", r.status, r.body)
	}
}

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
