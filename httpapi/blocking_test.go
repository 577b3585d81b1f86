package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
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

// calmCluster is startCluster with Raft timeouts of a second instead of
// 150ms, so that a busy machine does not start an election of its own in
// the middle of a test that waits for one.
func calmCluster(t *testing.T) *testCluster {
	t.Helper()
	return startClusterWith(t, 3, inproc.Options{TCP: true, Serve: serveAPI, Tweak: func(cfg *cluster.Config) {
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
		cfg.MinTTL = 2 * time.Second
	}})
}

// settledStatus waits until tn's status names the cluster and leader
// (a node that knows neither looks again every second on its own, so
// only then can nothing but a change end a wait), and returns its hash.
func settledStatus(t *testing.T, tn *testNode, leader string) string {
	t.Helper()
	var hash string
	harness.WaitUntil(t, 10*time.Second, tn.id+" names the cluster and the leader "+leader, func() bool {
		st := do(t, http.MethodGet, tn.url+"/v1/status", "")
		var now client.NodeStatus
		st.decode(t, &now)
		hash = st.header.Get(client.HeaderContentHash)
		return now.ClusterID != "" && now.LeaderID == leader
	})
	if again := do(t, http.MethodGet, tn.url+"/v1/status", ""); hash == "" || again.header.Get(client.HeaderContentHash) != hash {
		t.Fatalf("two status reads with nothing changed: hashes %q and %q, want one and the same", hash, again.header.Get(client.HeaderContentHash))
	}
	return hash
}

// A status read with ?hash= answers once the leader changes, on a
// follower that neither gains nor loses leadership itself, long before
// its own safety look (30s): following each answer's hash is how the
// inspection page keeps its cluster view and no-leader banner current
// without asking again and again.
func TestStatusWaitsForTheLeaderToChange(t *testing.T) {
	c := calmCluster(t)
	lead := c.leader()
	var watcher, target *testNode
	for _, tn := range c.nodes {
		switch {
		case tn == lead:
		case watcher == nil:
			watcher = tn
		default:
			target = tn
		}
	}
	hash := settledStatus(t, watcher, lead.id)

	// A wait that ends with nothing changed answers with the hash it
	// waited on, and with the status of its end: a lease written during
	// the wait shows in the applied index.
	status := sendAsync(http.MethodGet, watcher.url+"/v1/status?wait=1s&hash="+url.QueryEscape(hash))
	waitBlocked(t, watcher, 1)
	l := acquire(t, lead, "k", "h")
	got := receive(t, status, 5*time.Second)
	var end client.NodeStatus
	got.decode(t, &end)
	if got.header.Get(client.HeaderContentHash) != hash || end.AppliedIndex < l.ModifyIndex {
		t.Errorf("status at the end of its wait: hash %q (want the one waited on, %q), applied index %d (want the acquire's %d or more: read at the end of the wait, not at its start)",
			got.header.Get(client.HeaderContentHash), hash, end.AppliedIndex, l.ModifyIndex)
	}

	status = sendAsync(http.MethodGet, watcher.url+"/v1/status?wait=60s&hash="+url.QueryEscape(hash))
	waitBlocked(t, watcher, 1)
	quiet(t, status, 200*time.Millisecond, "before anything changed")

	r := do(t, http.MethodPost, lead.url+"/v1/operator/transfer-leader", `{"id":"`+target.id+`"}`)
	r.wantStatus(t, "transfer-leader", http.StatusOK)
	// Each answer's hash is the next wait's, until the watcher names
	// another leader; no answer may come early with the hash it waited on.
	deadline := time.Now().Add(10 * time.Second)
	for answers := 1; ; answers++ {
		got := receive(t, status, time.Until(deadline))
		got.wantStatus(t, "blocking status", http.StatusOK)
		var now client.NodeStatus
		got.decode(t, &now)
		next := got.header.Get(client.HeaderContentHash)
		if next == hash {
			t.Fatalf("blocking status answer %d came before its wait ended, with the hash it waited on (%q): %+v", answers, hash, now)
		}
		if now.LeaderID != "" && now.LeaderID != lead.id {
			t.Logf("answers until %s named the new leader %s: %d", watcher.id, now.LeaderID, answers)
			return
		}
		hash = next
		status = sendAsync(http.MethodGet, watcher.url+"/v1/status?wait=60s&hash="+url.QueryEscape(hash))
	}
}

// A status read with ?hash= keeps waiting while only indexes move (a
// lease comes and goes), even when the server looks again many times: it
// answers for the cluster's shape, not for each write.
func TestStatusWaitIgnoresIndexes(t *testing.T) {
	old := safetyRecheck
	safetyRecheck = 20 * time.Millisecond // restored after the cluster stops
	t.Cleanup(func() { safetyRecheck = old })
	c := calmCluster(t)
	lead, watcher := c.follower()
	hash := settledStatus(t, watcher, lead.id)
	status := sendAsync(http.MethodGet, watcher.url+"/v1/status?wait=2s&hash="+url.QueryEscape(hash))
	waitBlocked(t, watcher, 1)
	released(t, lead, "k", "h")
	quiet(t, status, 300*time.Millisecond, "after a lease came and went (only indexes moved)")
	if got := receive(t, status, 5*time.Second); got.header.Get(client.HeaderContentHash) != hash {
		t.Errorf("status at the end of its wait: hash %q, want the one waited on, %q", got.header.Get(client.HeaderContentHash), hash)
	}
}

// A members read with ?hash= answers once a member leaves.
func TestMembersWaitForAMemberToLeave(t *testing.T) {
	c := startClusterWith(t, 3, inproc.Options{TCP: true, Gossip: true, Serve: serveAPI})
	watcher := c.nodes[0]
	var list wire.MemberList
	var hash string
	harness.WaitUntil(t, 10*time.Second, "the watcher sees three gossip members", func() bool {
		r := do(t, http.MethodGet, watcher.url+"/v1/members", "")
		r.decode(t, &list)
		hash = r.header.Get(client.HeaderContentHash)
		return len(list.Members) == 3
	})
	members := sendAsync(http.MethodGet, watcher.url+"/v1/members?wait=60s&hash="+url.QueryEscape(hash))
	waitBlocked(t, watcher, 1)
	quiet(t, members, 300*time.Millisecond, "before a member left")
	c.cluster.Stop(2)
	got := receive(t, members, 20*time.Second)
	got.wantStatus(t, "blocking members", http.StatusOK)
	got.decode(t, &list)
	if got.header.Get(client.HeaderContentHash) == hash {
		t.Errorf("blocking members answered with the hash it waited on (%q): %+v", hash, list.Members)
	}
	for _, m := range list.Members {
		if m.Name == c.nodes[2].id && m.Status == "alive" {
			t.Errorf("blocking members answered with the stopped %s alive: %+v", m.Name, list.Members)
		}
	}
}

// The status hash covers what the cluster view shows of the cluster's
// shape, and none of what moves with every entry or heartbeat.
func TestStatusHashCoversTheShapeOnly(t *testing.T) {
	base := cluster.Status{NodeID: "n1", ClusterID: "c", Role: "follower", LeaderID: "n2", LeaderHTTPAddr: "127.0.0.1:2",
		Term: 3, Servers: []cluster.Server{{ID: "n1", Voter: true}, {ID: "n2", Voter: true, Leader: true}}}
	same := map[string]func(*cluster.Status){
		"indexes":      func(s *cluster.Status) { s.LastLogIndex, s.CommitIndex, s.AppliedIndex = 9, 9, 9 },
		"last token":   func(s *cluster.Status) { s.LastToken = 4 },
		"last contact": func(s *cluster.Status) { s.LastContact = time.Second },
		"health":       func(s *cluster.Status) { s.Health.BehindEntries, s.Health.BehindFor = 3, time.Second },
	}
	differs := map[string]func(*cluster.Status){
		"role":        func(s *cluster.Status) { s.Role = "candidate" },
		"leader":      func(s *cluster.Status) { s.LeaderID = "" },
		"leader addr": func(s *cluster.Status) { s.LeaderHTTPAddr = "" },
		"term":        func(s *cluster.Status) { s.Term++ },
		"ready":       func(s *cluster.Status) { s.Ready = true },
		"cluster id":  func(s *cluster.Status) { s.ClusterID = "" },
		"servers":     func(s *cluster.Status) { s.Servers = s.Servers[:1] },
		"suffrage":    func(s *cluster.Status) { s.Servers = []cluster.Server{{ID: "n1"}, base.Servers[1]} },
	}
	want := statusHash(base)
	for name, change := range same {
		s := base
		change(&s)
		if got := statusHash(s); got != want {
			t.Errorf("a change of %s changed the status hash (%s to %s): a waiting status read would answer on every entry", name, want, got)
		}
	}
	for name, change := range differs {
		s := base
		change(&s)
		if got := statusHash(s); got == want {
			t.Errorf("a change of %s left the status hash %s: a waiting status read would miss it", name, want)
		}
	}
}

// A wait on a hash that is not the current one answers at once; ?hash=
// must be a hash, and the wait a duration.
func TestStatusHashQuery(t *testing.T) {
	tn := startNode(t)
	r := do(t, http.MethodGet, tn.url+"/v1/status?hash=0&wait=60s", "")
	r.wantStatus(t, "status with an old hash", http.StatusOK)
	if r.header.Get(client.HeaderContentHash) == "" {
		t.Error("status answered without X-Tenure-Content-Hash")
	}
	for _, tc := range []struct{ query, field string }{
		{"hash=XYZ", "hash"},
		{"hash=" + strings.Repeat("a", 65), "hash"},
		{"hash=0&wait=soon", "wait"},
	} {
		for _, route := range []string{"/v1/status", "/v1/members"} {
			r := do(t, http.MethodGet, tn.url+route+"?"+url.PathEscape(tc.query), "")
			r.wantStatus(t, route+"?"+tc.query, http.StatusBadRequest)
			if e := r.apiErr(t); e.Field != tc.field {
				t.Errorf("%s?%s: field %q, want %q (%s)", route, tc.query, e.Field, tc.field, e.Message)
			}
		}
	}
}
