package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/test/harness"
)

// joinTimeout bounds how long a new server may take to appear in the Raft
// configuration after it starts.
const joinTimeout = 15 * time.Second

// TestFourthServerJoins: a server started with only -join joins a running
// cluster of three (-bootstrap-expect 3) as a non-voter and stays one,
// since the cluster has its three voters; so does one started with
// -non-voter. Both serve reads and forward writes. An operator promotes the
// first with `tenure operator raft promote`, beyond the configured size;
// then removes the failed servers with DELETE /v1/operator/servers/{id},
// and they stay removed.
func TestFourthServerJoins(t *testing.T) {
	c, l := startLedCluster(t, 3)
	written := c.acquire(t, l, "join/before", "worker", "30s", http.StatusCreated)

	tests := []struct {
		name  string
		flags []string
	}{
		{name: "plain"},
		{name: "non-voter", flags: []string{"-non-voter"}},
	}
	var joined []int
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			started := time.Now()
			i := c.addNode(t, append([]string{"-join", c.nodes[0].gossipAddr}, tt.flags...)...)
			joined = append(joined, i)
			id := c.nodes[i].id
			listed := func() error {
				st, err := c.status(l)
				if err != nil {
					return err
				}
				srv, ok := serverOf(st, id)
				if !ok {
					return fmt.Errorf("leader's configuration %+v has no %s", st.Servers, id)
				}
				if srv.Suffrage != "nonvoter" || srv.RaftAddr != c.nodes[i].raftAddr || srv.HTTPAddr != c.nodes[i].httpAddr {
					return fmt.Errorf("leader lists %+v, want %s at raft %s, http %s as nonvoter", srv, id, c.nodes[i].raftAddr, c.nodes[i].httpAddr)
				}
				return nil
			}
			poll.WaitFor(t, joinTimeout, listed)
			t.Logf("%s joined as a non-voter in %v", id, time.Since(started).Round(time.Millisecond))
			l = c.leader(t)
			// The new server has the lease state and forwards writes.
			poll.WaitFor(t, 5*time.Second, func() error {
				r := c.call(t, i, http.MethodGet, "/v1/leases/join/before?stale=true", nil)
				if r.Status != http.StatusOK {
					return fmt.Errorf("stale read on %s: %v", id, r)
				}
				return nil
			})
			if got := c.get(t, i, "join/before"); got.Token != written.Token || got.Holder != "worker" {
				t.Errorf("read via %s: token %d holder %q, want %d worker", id, got.Token, got.Holder, written.Token)
			}
			c.acquire(t, i, "join/via-"+id, "worker", "30s", http.StatusCreated)
			// Caught up, and stable for three times the leader's
			// -server-stabilization-time, it still is no voter: the
			// cluster has the three voters of -bootstrap-expect 3.
			poll.Holds(t, 3*time.Second, listed)
		})
	}
	if len(joined) != len(tests) {
		t.FailNow()
	}

	t.Run("operator promotes", func(t *testing.T) {
		i := joined[0]
		id := c.nodes[i].id
		var out []byte
		poll.WaitFor(t, 10*time.Second, func() error {
			cmd := exec.Command(binary, "operator", "raft", "promote", "-http-addr", strings.Join(c.httpAddrs(), ","), id)
			cmd.Env = cleanEnv()
			var err error
			if out, err = cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("tenure operator raft promote %s: %v: %s", id, err, out)
			}
			return nil
		})
		if want := fmt.Sprintf("Server %s is a voter (4 voters)", id); !strings.Contains(string(out), want) {
			t.Errorf("tenure operator raft promote %s said %q, want %q", id, out, want)
		}
		l = c.leader(t)
		st := c.mustStatus(t, l)
		if srv, ok := serverOf(st, id); !ok || srv.Suffrage != "voter" {
			t.Errorf("after the promotion the leader lists %+v, want %s as voter", st.Servers, id)
		}
		c.acquire(t, l, "join/after-promotion", "worker", "30s", http.StatusCreated)
	})

	t.Run("remove the failed servers", func(t *testing.T) {
		for _, i := range joined {
			c.stop(t, i)
		}
		l = c.leader(t)
		// The operator removes servers that gossip already declared
		// failed; see TestRemovedServerStaysRemoved for a fresh failure.
		// With two of five members down, memberlist's suspicion timeout
		// grows towards its maximum (about 17s here), and more on a loaded
		// machine.
		poll.WaitFor(t, 45*time.Second, func() error {
			for _, i := range joined {
				if st, ok := c.memberStatus(t, l, c.nodes[i].id); ok && st == "alive" {
					return fmt.Errorf("gossip on %s still says %s is alive", c.nodes[l].id, c.nodes[i].id)
				}
			}
			return nil
		})
		for k, i := range joined {
			via := c.followers(l)[k%2] // forwarded to the leader
			id := c.nodes[i].id
			// Gone from gossip (a stopped server leaves it), and the three
			// voters of -bootstrap-expect remain: no force needed once the
			// leader is out of touch with it (it was in touch until the
			// stop: refused as alive for a moment).
			poll.WaitFor(t, 15*time.Second, func() error {
				r := c.call(t, via, http.MethodDelete, "/v1/operator/servers/"+id, nil)
				if r.Status != http.StatusOK {
					return fmt.Errorf("DELETE /v1/operator/servers/%s via %s: got %v, want 200", id, c.nodes[via].id, r)
				}
				return nil
			})
		}
		removed := func() error {
			for _, k := range []int{0, 1, 2} {
				st, err := c.status(k)
				if err != nil {
					return err
				}
				for _, i := range joined {
					if _, ok := serverOf(st, c.nodes[i].id); ok {
						return fmt.Errorf("%s still lists %s: %+v", c.nodes[k].id, c.nodes[i].id, st.Servers)
					}
				}
				if len(st.Servers) != 3 {
					return fmt.Errorf("%s lists %d servers, want 3: %+v", c.nodes[k].id, len(st.Servers), st.Servers)
				}
			}
			return nil
		}
		poll.WaitFor(t, 5*time.Second, removed)
		poll.Holds(t, 3*time.Second, removed) // longer than the leader's reconcile period
		c.acquire(t, l, "join/after-removal", "worker", "30s", http.StatusCreated)
	})

	t.Run("unknown server id", func(t *testing.T) {
		l := c.leader(t)
		for _, via := range []int{l, c.followers(l)[0]} {
			r := c.call(t, via, http.MethodDelete, "/v1/operator/servers/no-such-server", nil)
			var e apiError
			r.decode(t, &e)
			if r.Status != http.StatusNotFound || e.Error != "not_found" {
				t.Errorf("DELETE an unknown server via %s: got %v, want 404 not_found", c.nodes[via].id, r)
			}
		}
	})
}

// TestRemovedServerStaysRemoved: an operator who removes a server right
// after it failed (before gossip has declared it dead) must not find it back
// in the Raft configuration: a dead server that comes back would be
// promoted to a voter that does not answer the moment the cluster has room
// for one.
func TestRemovedServerStaysRemoved(t *testing.T) {
	c, l := startLedCluster(t, 3)
	i := c.addNode(t, "-join", c.nodes[l].gossipAddr)
	id := c.nodes[i].id
	poll.WaitFor(t, joinTimeout, func() error {
		st, err := c.status(l)
		if err != nil {
			return err
		}
		if _, ok := serverOf(st, id); !ok {
			return fmt.Errorf("leader's configuration %+v has no %s", st.Servers, id)
		}
		return nil
	})
	c.stop(t, i)
	// Right after it stopped the leader may still count it as in touch:
	// the operator forces the removal.
	r := c.call(t, l, http.MethodDelete, "/v1/operator/servers/"+id+"?force=true", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("DELETE /v1/operator/servers/%s?force=true: got %v, want 200", id, r)
	}
	// Gossip needs a few seconds to declare the stopped server dead; the
	// leader adds servers it sees alive every two seconds.
	poll.Holds(t, 8*time.Second, func() error {
		st, err := c.status(l)
		if err != nil {
			return err
		}
		if srv, ok := serverOf(st, id); ok {
			return fmt.Errorf("removed server %s is back in the configuration as %s: %+v", id, srv.Suffrage, st.Servers)
		}
		return nil
	})
}

// TestOperatorRoutes: the operator and health routes answer as documented:
// leadership transfer, on-demand snapshots, liveness, readiness with the
// node's role, and Prometheus metrics that include tenure's own and Raft's.
func TestOperatorRoutes(t *testing.T) {
	c, l := startLedCluster(t, 3)
	written := c.acquire(t, c.followers(l)[0], "ops/lease", "worker", "30s", http.StatusCreated)

	t.Run("healthz and readyz", func(t *testing.T) {
		c.stably(t, func(l int) []string {
			var errs []string
			for i, nd := range c.nodes {
				r := c.callOnce(t, i, http.MethodGet, "/healthz", nil)
				var health struct{ Status string }
				r.decode(t, &health)
				if r.Status != http.StatusOK || health.Status != "ok" {
					errs = append(errs, fmt.Sprintf("/healthz on %s: got %v, want 200 ok", nd.id, r))
				}
				wantRole := "follower"
				if i == l {
					wantRole = "leader"
				}
				r = c.callOnce(t, i, http.MethodGet, "/readyz", nil)
				var ready client.Readiness
				r.decode(t, &ready)
				if r.Status != http.StatusOK || !ready.Ready || ready.Role != wantRole || ready.LeaderID != c.nodes[l].id {
					errs = append(errs, fmt.Sprintf("/readyz on %s: got %v, want 200 ready as %s with leader %s", nd.id, r, wantRole, c.nodes[l].id))
				}
			}
			return errs
		})
	})

	t.Run("metrics", func(t *testing.T) {
		// Counters of lease operations live on whichever node led when
		// they happened; Raft's commit time on whichever node committed.
		var acquisitions, commits float64
		for i, nd := range c.nodes {
			var m map[string]float64
			poll.WaitFor(t, 5*time.Second, func() error {
				r, err := c.try(nd.httpAddr, http.MethodGet, "/metrics", nil)
				if err != nil {
					return err
				}
				if r.Status != http.StatusOK {
					return fmt.Errorf("/metrics on %s: got status %d", nd.id, r.Status)
				}
				m = parseMetrics(r.Body)
				st, err := c.status(i)
				if err != nil {
					return err
				}
				if got, ok := m[`tenure_leases{state="held"}`]; !ok || got < 1 {
					return fmt.Errorf("/metrics on %s: tenure_leases{state=\"held\"} = %v (present %v), want >= 1", nd.id, got, ok)
				}
				if got, ok := m["tenure_raft_term"]; !ok || uint64(got) != st.Term {
					return fmt.Errorf("/metrics on %s: tenure_raft_term = %v (present %v), want %d as in /v1/status", nd.id, got, ok, st.Term)
				}
				if _, ok := m["tenure_acquisitions_total"]; !ok {
					return fmt.Errorf("/metrics on %s: no tenure_acquisitions_total", nd.id)
				}
				return nil
			})
			acquisitions += m["tenure_acquisitions_total"]
			// Raft's own go-metrics, through the Prometheus sink.
			commits += m["tenure_raft_commit_time_seconds_count"]
			t.Logf("/metrics on %s: %d series, tenure_acquisitions_total %v, tenure_raft_commit_time_seconds_count %v", nd.id, len(m), m["tenure_acquisitions_total"], m["tenure_raft_commit_time_seconds_count"])
		}
		if acquisitions < 1 {
			t.Errorf("tenure_acquisitions_total summed over the servers: %v, want >= 1", acquisitions)
		}
		if commits < 1 {
			t.Errorf("tenure_raft_commit_time_seconds_count summed over the servers: %v, want >= 1 (Raft's own metrics)", commits)
		}
	})

	t.Run("snapshot", func(t *testing.T) {
		for i, nd := range c.nodes {
			poll.WaitFor(t, 5*time.Second, func() error {
				st, err := c.status(i)
				if err != nil {
					return err
				}
				if st.AppliedIndex < written.ModifyIndex {
					return fmt.Errorf("%s applied %d, want >= %d", nd.id, st.AppliedIndex, written.ModifyIndex)
				}
				return nil
			})
			r := c.call(t, i, http.MethodPost, "/v1/operator/snapshot", nil)
			if r.Status != http.StatusOK {
				t.Fatalf("snapshot on %s: got %v, want 200", nd.id, r)
			}
			var snap client.SnapshotInfo
			r.decode(t, &snap)
			st := c.mustStatus(t, i)
			if snap.ID == "" || snap.Index < written.ModifyIndex || snap.Index > st.AppliedIndex || snap.Term == 0 || snap.Term > st.Term || snap.Size <= 0 {
				t.Errorf("snapshot on %s: got %+v, want an id, index in [%d, %d], term in [1, %d] and a size", nd.id, snap, written.ModifyIndex, st.AppliedIndex, st.Term)
			}
		}
	})

	t.Run("transfer leadership", func(t *testing.T) {
		old := c.leader(t)
		target := c.followers(old)[1]
		tests := []struct {
			name string
			via  int
			body string
			want int // the node that must lead afterwards; -1: any other
		}{
			{name: "to a named server, through the leader", via: old, body: fmt.Sprintf(`{"id":%q}`, c.nodes[target].id), want: target},
			{name: "to the most up-to-date server, through a follower", body: `{}`, want: -1},
		}
		for _, tt := range tests {
			cur := c.leader(t)
			via := tt.via
			if tt.want < 0 {
				via = c.followers(cur)[0]
			}
			started := time.Now()
			r := c.call(t, via, http.MethodPost, "/v1/operator/transfer-leader", tt.body)
			if r.Status != http.StatusOK {
				t.Fatalf("%s: got %v, want 200", tt.name, r)
			}
			var out wire.TransferResult
			r.decode(t, &out)
			now := c.leader(t)
			t.Logf("%s: %s to %s in %v", tt.name, c.nodes[cur].id, c.nodes[now].id, time.Since(started).Round(time.Millisecond))
			switch {
			case tt.want >= 0 && now != tt.want:
				t.Errorf("%s: %s leads, want %s", tt.name, c.nodes[now].id, c.nodes[tt.want].id)
			case now == cur:
				t.Errorf("%s: %s still leads", tt.name, c.nodes[cur].id)
			}
			if out.LeaderID != c.nodes[now].id {
				t.Errorf("%s: answer says leader_id %q, want the new leader %q", tt.name, out.LeaderID, c.nodes[now].id)
			}
		}
		cur := c.leader(t)
		r := c.call(t, cur, http.MethodPost, "/v1/operator/transfer-leader", `{"id":"no-such-server"}`)
		var e apiError
		r.decode(t, &e)
		if r.Status != http.StatusNotFound || e.Error != "not_found" {
			t.Errorf("transfer to an unknown server: got %v, want 404 not_found", r)
		}
		// The lease survived every transfer.
		if got := c.get(t, cur, "ops/lease"); got.State != "held" || got.Token != written.Token {
			t.Errorf("ops/lease after the transfers: state %q token %d, want held with token %d", got.State, got.Token, written.Token)
		}
	})
}

// stably runs check, which returns its failures, against the current
// leader; when the leadership moved while it ran (a busy machine), it runs
// it again, up to three times. It reports the failures of the last run.
func (c *cluster) stably(t *testing.T, check func(leader int) []string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		l := c.leader(t)
		term := c.mustStatus(t, l).Term
		errs := check(l)
		now := c.leader(t)
		if (now == l && c.mustStatus(t, now).Term == term) || attempt == 3 {
			for _, e := range errs {
				t.Error(e)
			}
			return
		}
		t.Logf("the leadership moved from %s (term %d) to %s during the check: checking again", c.nodes[l].id, term, c.nodes[now].id)
	}
}

// memberStatus reads node i's gossip view of the member named name.
func (c *cluster) memberStatus(t *testing.T, i int, name string) (string, bool) {
	t.Helper()
	r := c.call(t, i, http.MethodGet, "/v1/members", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET /v1/members on %s: got %v", c.nodes[i].id, r)
	}
	var out wire.MemberList
	r.decode(t, &out)
	for _, m := range out.Members {
		if m.Name == name {
			return m.Status, true
		}
	}
	return "", false
}

// parseMetrics reads the Prometheus text format into series name (with its
// labels, as printed) and value.
func parseMetrics(b []byte) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		out[line[:sp]] = v
	}
	return out
}

// A server of the configuration that comes back at another Raft address (a
// rescheduled pod with a new IP) is moved by the leader and catches up,
// instead of staying cut off while the leader dials its old address; a
// voter comes back as a non-voter there and is promoted again once it has
// caught up for -server-stabilization-time.
func TestServerRejoinsAtNewRaftAddress(t *testing.T) {
	c, l := startLedCluster(t, 3)
	f := c.followers(l)[0]
	nd := c.nodes[f]
	c.stop(t, f)

	ports, err := harness.FreePorts(1)
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	newAddr := harness.Loopback(ports[0])
	for i, a := range nd.args {
		if a == nd.raftAddr {
			nd.args[i] = newAddr
		}
	}
	nd.raftAddr = newAddr
	c.restart(t, f)

	l = c.leader(t)
	c.acquire(t, l, "moved/after", "worker", "30s", http.StatusCreated)
	target := c.mustStatus(t, l).AppliedIndex
	poll.WaitFor(t, 20*time.Second, func() error {
		ls, err := c.status(l)
		if err != nil {
			return err
		}
		for _, s := range ls.Servers {
			if s.ID == nd.id && s.RaftAddr != newAddr {
				return fmt.Errorf("leader has %s at %s, want %s", nd.id, s.RaftAddr, newAddr)
			}
			// It came back as a non-voter (gossip never moves a voter)
			// and is promoted once caught up for the stabilization time.
			if s.ID == nd.id && s.Suffrage != "voter" {
				return fmt.Errorf("leader has %s as %s at %s, want a voter again", nd.id, s.Suffrage, s.RaftAddr)
			}
		}
		st, err := c.status(f)
		if err != nil {
			return err
		}
		if st.AppliedIndex < target {
			return fmt.Errorf("%s applied index %d, want >= %d", nd.id, st.AppliedIndex, target)
		}
		return nil
	})
}

// TestServerOfAnotherClusterNeverJoins: a server of another cluster started
// with -join at this cluster's gossip address (a staging server given a
// production -join by mistake) never changes the Raft configuration of any
// server, and the leader says why in its log.
func TestServerOfAnotherClusterNeverJoins(t *testing.T) {
	c, l := startLedCluster(t, 3)
	rogue := c.addNode(t, "-join", c.nodes[l].gossipAddr, "-cluster-name", "staging")
	id := c.nodes[rogue].id
	poll.WaitFor(t, joinTimeout, func() error {
		if st, ok := c.memberStatus(t, l, id); !ok || st != "alive" {
			return fmt.Errorf("the leader's gossip lists %s as %q (listed %v), want alive", id, st, ok)
		}
		return nil
	})
	same := func() error {
		for k := 0; k < 3; k++ {
			st, err := c.status(k)
			if err != nil {
				return err
			}
			var ids []string
			for _, srv := range st.Servers {
				ids = append(ids, srv.ID+"/"+srv.Suffrage+"@"+srv.RaftAddr)
			}
			want := fmt.Sprintf("n1/voter@%s n2/voter@%s n3/voter@%s", c.nodes[0].raftAddr, c.nodes[1].raftAddr, c.nodes[2].raftAddr)
			if got := strings.Join(ids, " "); got != want {
				return fmt.Errorf("%s lists the servers %s, want %s", c.nodes[k].id, got, want)
			}
		}
		return nil
	}
	poll.Holds(t, 8*time.Second, same)
	c.kill(t, rogue) // it knows no leader: c.leader would wait for it to agree
	l = c.leader(t)
	if log := tail(c.nodes[l].logPath, 1000); !strings.Contains(log, "server not admitted to raft") || !strings.Contains(log, `announces cluster \"staging\"`) {
		t.Errorf("the leader's log does not say why %s was not admitted:\n%s", id, tail(c.nodes[l].logPath, 40))
	}
	c.acquire(t, l, "rogue/after", "worker", "30s", http.StatusCreated)
}
