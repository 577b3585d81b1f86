package integration

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/test/harness/damage"
)

// TestDamagedLogEntryStopsTheServer: one flipped byte inside a key name of
// a log entry in a stopped follower's raft.db. Restarted, the server
// refuses to start, exits non-zero and says which file, which entry, and
// what to do; the other two keep serving with every lease and token
// intact; after the remedy (the data dir moved aside, the server started
// again with the same flags) it resyncs from the leader, serves the same
// state, and leads without losing a grant or granting a held key.
func TestDamagedLogEntryStopsTheServer(t *testing.T) {
	c, l := startLedCluster(t, 3)
	held := map[string]lease{}
	for i, key := range []string{"scene-01", "scene-02", "scene-03"} {
		held[key] = c.acquire(t, l, key, fmt.Sprintf("tracker-%d", i), "10m", http.StatusCreated)
	}
	lastToken := c.mustStatus(t, l).LastToken

	f := c.followers(l)[0]
	nd := c.nodes[f]
	poll.WaitFor(t, 10*time.Second, func() error { // the follower has the entries
		if st := c.mustStatus(t, f); st.LastToken != lastToken {
			return fmt.Errorf("%s: last_token %d, want %d", nd.id, st.LastToken, lastToken)
		}
		return nil
	})
	c.stop(t, f)
	index, path, err := damage.FlipInKey(nd.dataDir, "scene-01")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("flipped a byte of scene-01 in entry %d of %s", index, path)

	refusesToStart(t, nd, "a damaged log", "the log is damaged", fmt.Sprintf("entry %d of %s", index, path),
		"remove-server -force "+nd.id, "move the data dir "+nd.dataDir+" aside", "readmit-server "+nd.id)

	// The other two serve every lease as it was and refuse an intruder.
	l = c.leader(t)
	for key, want := range held {
		if got := replicated(c.get(t, l, key)); got.Holder != want.Holder || got.Token != want.Token || got.State != "held" {
			t.Errorf("%s on the two healthy servers: %+v, want held by %s with token %d", key, got, want.Holder, want.Token)
		}
	}
	c.acquire(t, l, "scene-01", "intruder", "10m", http.StatusConflict)
	if st := c.mustStatus(t, l); st.LastToken != lastToken {
		t.Errorf("last_token %d, want %d", st.LastToken, lastToken)
	}

	// The remedy, as the message gives it: remove the server (forced: two
	// voters are fewer than the three the cluster was bootstrapped with),
	// move the data dir aside, start it with the same flags, readmit it.
	if r := c.call(t, l, http.MethodDelete, "/v1/operator/servers/"+nd.id+"?force=true", nil); r.Status != http.StatusOK {
		t.Fatalf("remove %s: %v", nd.id, r)
	}
	if err := os.Rename(nd.dataDir, nd.dataDir+".damaged"); err != nil {
		t.Fatal(err)
	}
	c.restart(t, f)
	c.readmit(t, l, nd)
	poll.WaitFor(t, 30*time.Second, func() error {
		st, err := c.status(f)
		if err != nil {
			return err
		}
		if st.LastToken != lastToken {
			return fmt.Errorf("%s: last_token %d, want %d", nd.id, st.LastToken, lastToken)
		}
		if srv, ok := serverOf(st, nd.id); !ok || srv.Suffrage != "voter" {
			return fmt.Errorf("%s is not a voter: %+v", nd.id, st.Servers)
		}
		return nil
	})
	for key, want := range held {
		r := c.call(t, f, http.MethodGet, "/v1/leases/"+key+"?stale=true", nil)
		var got lease
		r.decode(t, &got)
		if r.Status != http.StatusOK || got.Holder != want.Holder || got.Token != want.Token || got.State != "held" {
			t.Errorf("%s read on the resynced %s: %v, want held by %s with token %d", key, nd.id, r, want.Holder, want.Token)
		}
	}

	// Led by the resynced server, the cluster keeps every grant.
	if r := c.call(t, l, http.MethodPost, "/v1/operator/transfer-leader", fmt.Sprintf(`{"id":%q}`, nd.id)); r.Status != http.StatusOK {
		t.Fatalf("transfer leadership to %s: %v", nd.id, r)
	}
	if now := c.leader(t); now != f {
		t.Fatalf("%s leads, want %s", c.nodes[now].id, nd.id)
	}
	c.acquire(t, f, "scene-01", "intruder", "10m", http.StatusConflict)
	for key, want := range held {
		if got := c.get(t, f, key); got.Holder != want.Holder || got.Token != want.Token {
			t.Errorf("%s under %s: %+v, want held by %s with token %d", key, nd.id, got, want.Holder, want.Token)
		}
	}
}

// TestLoweredTermStopsTheServer: CurrentTerm and LastVoteTerm of a stopped
// server's raft.db lowered by one (2 to 1 on a fresh server) with a byte
// edit. Restarted, the server refuses to start with exit 78, naming the
// file and the remedy: a server that forgets its vote may vote twice.
func TestLoweredTermStopsTheServer(t *testing.T) {
	c := startCluster(t, 1)
	nd := c.nodes[0]
	c.stop(t, 0)
	was, path, err := damage.LowerTerm(nd.dataDir, "CurrentTerm", "LastVoteTerm")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lowered CurrentTerm and LastVoteTerm of %s from %v by one", path, was)
	refusesToStart(t, nd, "a lowered term and vote",
		"the term and vote in "+path+" cannot be trusted", "remove-server -force "+nd.id, "readmit-server "+nd.id)
}

// refusesToStart starts the stopped server nd and checks that it refuses:
// it exits, with status 78, and its last log lines say each of wants. what
// names what it was started on, for the failure message.
func refusesToStart(t *testing.T, nd *node, what string, wants ...string) {
	t.Helper()
	p, exited := startToExit(t, nd, startTimeout)
	if !exited {
		t.Fatalf("%s kept running on %s", nd.id, what)
	}
	var exit *exec.ExitError
	if !errors.As(p.err, &exit) || exit.ExitCode() != 78 {
		t.Errorf("%s exited with %v, want exit status 78 (a refusal to start)", nd.id, p.err)
	}
	out := tail(nd.logPath, 5)
	t.Logf("%s stopped with:\n%s", nd.id, out)
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("%s's last words do not say %q:\n%s", nd.id, want, out)
		}
	}
}
