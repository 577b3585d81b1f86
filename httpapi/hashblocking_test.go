package httpapi

import (
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
