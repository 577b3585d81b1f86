package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
)

// readMode is one way to read a lease: its subtest name and the query
// that asks for it.
type readMode struct{ name, query string }

// readModes are a linearizable read and a stale one, the latter asked for
// with the query stale.
func readModes(stale string) []readMode {
	return []readMode{{"linearizable", ""}, {"stale", stale}}
}

// A blocking read of one key answers only once that key changes past the
// index the caller passed; changes to other keys do not end the wait.
func TestBlockingGetWaitsForTheKey(t *testing.T) {
	tn := startNode(t)
	for _, tc := range readModes("&stale=true") {
		t.Run(tc.name, func(t *testing.T) {
			key := "watched-" + tc.name
			l := acquire(t, tn, key, "h1")
			r := do(t, http.MethodGet, tn.url+"/v1/leases/"+key, "")
			r.wantStatus(t, "get", http.StatusOK)
			idx := r.index(t)
			if idx != l.ModifyIndex {
				t.Fatalf("got X-Tenure-Index %d, want the key's modify_index %d", idx, l.ModifyIndex)
			}

			ch := sendAsync(http.MethodGet, fmt.Sprintf("%s/v1/leases/%s?index=%d&wait=5s%s", tn.url, key, idx, tc.query))
			waitBlocked(t, tn, 1)
			quiet(t, ch, 100*time.Millisecond, "before anything changed")
			other := acquire(t, tn, "unrelated-"+tc.name, "h2")
			quiet(t, ch, 200*time.Millisecond, "after a different key changed")

			release(t, tn, key, "h1", l.Token)
			got := receive(t, ch, 5*time.Second)
			got.wantStatus(t, "blocking get", http.StatusOK)
			after := got.index(t)
			if after <= idx {
				t.Errorf("got X-Tenure-Index %d after the change, want more than %d", after, idx)
			}
			if after <= other.ModifyIndex {
				t.Errorf("got X-Tenure-Index %d, want past the unrelated change at %d", after, other.ModifyIndex)
			}
			gl := got.lease(t)
			if gl.State != "free" || gl.Reason != "released" || gl.Token != l.Token {
				t.Errorf("got state %q reason %q token %d, want free, released, token %d", gl.State, gl.Reason, gl.Token, l.Token)
			}
			if gl.ModifyIndex != after {
				t.Errorf("got modify_index %d, want it equal to X-Tenure-Index %d", gl.ModifyIndex, after)
			}
		})
	}
}

// When nothing changes, a blocking read answers at the end of its wait with
// the same state and the same index.
func TestBlockingGetTimesOutUnchanged(t *testing.T) {
	tn := startNode(t)
	l := acquire(t, tn, "still", "h1")
	for _, tc := range readModes("&stale") {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, http.MethodGet, fmt.Sprintf("%s/v1/leases/still?index=%d&wait=300ms%s", tn.url, l.ModifyIndex, tc.query), "")
			r.wantStatus(t, "blocking get", http.StatusOK)
			if got := r.index(t); got != l.ModifyIndex {
				t.Errorf("got X-Tenure-Index %d, want the unchanged %d", got, l.ModifyIndex)
			}
			got := r.lease(t)
			if got.Holder != l.Holder || got.Token != l.Token || got.State != "held" || got.ModifyIndex != l.ModifyIndex {
				t.Errorf("got %+v, want the lease as acquired: %+v", got, l)
			}
		})
	}
}

// A blocking list answers once any lease changes past the index, and at the
// end of its wait with the same index otherwise.
func TestBlockingList(t *testing.T) {
	tn := startNode(t)
	acquire(t, tn, "jobs/1", "h1")
	r := do(t, http.MethodGet, tn.url+"/v1/leases?prefix=jobs/", "")
	r.wantStatus(t, "list", http.StatusOK)
	idx := r.index(t)
	var first wire.LeaseList
	r.decode(t, &first)
	if first.Index != idx {
		t.Fatalf("got body index %d, want X-Tenure-Index %d", first.Index, idx)
	}

	t.Run("times out unchanged", func(t *testing.T) {
		r := do(t, http.MethodGet, fmt.Sprintf("%s/v1/leases?prefix=jobs/&index=%d&wait=300ms", tn.url, idx), "")
		r.wantStatus(t, "blocking list", http.StatusOK)
		if got := r.index(t); got != idx {
			t.Errorf("got X-Tenure-Index %d, want the unchanged %d", got, idx)
		}
		var l wire.LeaseList
		r.decode(t, &l)
		if len(l.Leases) != 1 || l.Leases[0].Key != "jobs/1" {
			t.Errorf("got leases %+v, want only jobs/1", l.Leases)
		}
	})

	t.Run("answers after a change", func(t *testing.T) {
		var added client.LeaseInfo
		r := blockedGet(t, tn, fmt.Sprintf("%s/v1/leases?prefix=jobs/&index=%d&wait=5s", tn.url, idx), "before anything changed",
			func() { added = acquire(t, tn, "jobs/2", "h2") })
		r.wantStatus(t, "blocking list", http.StatusOK)
		if got := r.index(t); got <= idx || got != added.ModifyIndex {
			t.Errorf("got X-Tenure-Index %d, want %d (the new lease's modify_index, past %d)", got, added.ModifyIndex, idx)
		}
		var l wire.LeaseList
		r.decode(t, &l)
		var keys []string
		for _, x := range l.Leases {
			keys = append(keys, x.Key)
		}
		if fmt.Sprint(keys) != "[jobs/1 jobs/2]" {
			t.Errorf("got keys %v, want [jobs/1 jobs/2]", keys)
		}
	})
}

// A blocking read of a key that does not exist yet answers 404 with an index
// to wait on, and 200 once the key is created.
func TestBlockingGetUntilCreated(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before runs on a fresh cluster before the watch starts.
		before func(t *testing.T, tn *testNode)
	}{
		{"fresh cluster", func(*testing.T, *testNode) {}},
		{"other keys exist", func(t *testing.T, tn *testNode) { acquire(t, tn, "someone-else", "h0") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tn := startNode(t)
			tc.before(t, tn)
			r := do(t, http.MethodGet, tn.url+"/v1/leases/later", "")
			r.wantStatus(t, "get of a missing key", http.StatusNotFound)
			if e := r.apiErr(t); e.Error != "not_found" {
				t.Fatalf("got code %q, want not_found", e.Error)
			}
			idx := r.index(t)
			if idx == 0 {
				t.Fatalf("got X-Tenure-Index 0 on a 404: a watcher could not block on it")
			}

			r = do(t, http.MethodGet, fmt.Sprintf("%s/v1/leases/later?index=%d&wait=300ms", tn.url, idx), "")
			r.wantStatus(t, "blocking get that times out", http.StatusNotFound)
			if got := r.index(t); got != idx {
				t.Errorf("got X-Tenure-Index %d after the wait, want the unchanged %d", got, idx)
			}

			var l client.LeaseInfo
			r = blockedGet(t, tn, fmt.Sprintf("%s/v1/leases/later?index=%d&wait=5s", tn.url, idx), "before the key was created",
				func() { l = acquire(t, tn, "later", "h1") })
			r.wantStatus(t, "blocking get after creation", http.StatusOK)
			if got := r.lease(t); got.Key != "later" || got.Holder != "h1" || got.Token != l.Token {
				t.Errorf("got %+v, want the new lease %+v", got, l)
			}
			if got := r.index(t); got != l.ModifyIndex {
				t.Errorf("got X-Tenure-Index %d, want %d", got, l.ModifyIndex)
			}
		})
	}
}

// Bad index and wait parameters are refused before any wait.
func TestBlockingBadParameters(t *testing.T) {
	tn := startNode(t)
	acquire(t, tn, "k", "h1")
	checkRefusals(t, tn.url, []refusal{
		{"index not a number", http.MethodGet, "/v1/leases/k?index=abc", "", 400, "invalid_index", "index", ""},
		{"index negative", http.MethodGet, "/v1/leases/k?index=-1", "", 400, "invalid_index", "index", ""},
		{"list index not a number", http.MethodGet, "/v1/leases?index=abc", "", 400, "invalid_index", "index", ""},
		{"wait negative", http.MethodGet, "/v1/leases/k?index=1&wait=-1s", "", 400, "invalid_wait", "wait", ""},
		{"wait not a duration", http.MethodGet, "/v1/leases/k?index=1&wait=soon", "", 400, "invalid_wait", "wait", ""},
		{"list wait negative", http.MethodGet, "/v1/leases?index=1&wait=-1s", "", 400, "invalid_wait", "wait", ""},
		{"stale index not a number", http.MethodGet, "/v1/leases/k?stale=true&index=abc", "", 400, "invalid_index", "index", ""},
		{"list state", http.MethodGet, "/v1/leases?state=gone", "", 400, "invalid_query", "state", ""},
	})
}

// On a cluster without any lease, a list still reports an index that a
// watcher can block on, and the first acquisition ends that wait.
func TestBlockingListOnEmptyCluster(t *testing.T) {
	tn := startNode(t)
	r := do(t, http.MethodGet, tn.url+"/v1/leases", "")
	r.wantStatus(t, "list", http.StatusOK)
	var empty wire.LeaseList
	r.decode(t, &empty)
	idx := r.index(t)
	if len(empty.Leases) != 0 || idx == 0 || empty.Index != idx {
		t.Fatalf("got %d leases, X-Tenure-Index %d, body index %d; want none, an index above 0 and the same in both", len(empty.Leases), idx, empty.Index)
	}

	var l client.LeaseInfo
	r = blockedGet(t, tn, fmt.Sprintf("%s/v1/leases?index=%d&wait=5s", tn.url, idx), "before any lease existed",
		func() { l = acquire(t, tn, "first", "h1") })
	r.wantStatus(t, "blocking list", http.StatusOK)
	var got wire.LeaseList
	r.decode(t, &got)
	if len(got.Leases) != 1 || got.Leases[0].Key != "first" || got.Index != l.ModifyIndex {
		t.Errorf("got %+v, want the lease on first at index %d", got, l.ModifyIndex)
	}
}

// A blocking read whose client goes away ends at once on the server, for a
// local wait and for one forwarded to the leader alike.
func TestBlockingClientGoesAway(t *testing.T) {
	c := startCluster(t, 3)
	leader, follower := c.follower()
	l := acquire(t, leader, "abandoned", "h1")
	for _, tc := range []struct {
		name string
		tn   *testNode
	}{
		{"on the leader", leader},
		{"forwarded by a follower", follower},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/v1/leases/abandoned?index=%d&wait=5m", tc.tn.url, l.ModifyIndex), nil)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				resp, err := httpClient.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				done <- err
			}()
			waitBlocked(t, leader, 1)
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want the client's own cancellation", err)
			}
			waitBlocked(t, leader, 0)
			waitBlocked(t, tc.tn, 0)
		})
	}
}

// A blocking read that ends with its wait answers with the state of the
// end of the wait: a held lease's time left has gone down by the wait,
// though nothing changed its index.
func TestBlockingReadAnswersTheEndOfItsWait(t *testing.T) {
	tn := startNode(t)
	l := acquire(t, tn, "waited", "h1")
	start := time.Now()
	r := do(t, http.MethodGet, fmt.Sprintf("%s/v1/leases/waited?index=%d&wait=1500ms", tn.url, l.ModifyIndex), "")
	r.wantStatus(t, "blocking get", http.StatusOK)
	took := time.Since(start)
	got := r.lease(t)
	if took < 1500*time.Millisecond || got.ModifyIndex != l.ModifyIndex {
		t.Fatalf("blocking get answered after %v with modify_index %d, want the end of its 1.5s wait, index %d", took, got.ModifyIndex, l.ModifyIndex)
	}
	if got.ExpiresIn > l.ExpiresIn-time.Second {
		t.Errorf("time left at the end of a 1.5s wait: %v, at the acquire %v; want at least a second less: an answer read when the wait began knows nothing of the time since", got.ExpiresIn, l.ExpiresIn)
	}
}
