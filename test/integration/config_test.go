package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	tcluster "github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
)

// TestServerConfigSources: `tenure server` reads its settings from a JSON
// -config file, TENURE_* environment variables and flags, each overriding
// the one before; and it refuses a bad configuration at once, with an exit
// status that is not 0 and a message that names the setting.
func TestServerConfigSources(t *testing.T) {
	c := newCluster(t)
	ports, err := harness.FreePorts(4)
	if err != nil {
		t.Fatal(err)
	}
	fileHTTP, envHTTP := harness.Loopback(ports[0]), harness.Loopback(ports[1])
	configPath := filepath.Join(c.dir, "server.json")
	writeJSON(t, configPath, map[string]any{
		"node-id":              "from-file",
		"data-dir":             filepath.Join(c.dir, "configured", "data"),
		"http-addr":            fileHTTP,
		"raft-addr":            harness.Loopback(ports[2]),
		"gossip-addr":          harness.Loopback(ports[3]),
		"bootstrap-expect":     1,
		"heartbeat-timeout":    "500ms",
		"election-timeout":     "500ms",
		"leader-lease-timeout": "500ms",
		"min-ttl":              "3s",  // from the file only
		"max-ttl":              "20s", // the environment overrides it
	})
	nd := &node{
		id:       "from-flag",
		httpAddr: envHTTP,
		logPath:  filepath.Join(c.dir, "configured.log"),
		args:     []string{"-config", configPath, "-node-id", "from-flag"},
		// TENURE_HTTP_ADDR is the clients' list of servers: a server
		// ignores it (a shell may have exported it for the CLI).
		env: []string{"TENURE_SERVER_HTTP_ADDR=" + envHTTP, "TENURE_HTTP_ADDR=127.0.0.1:1,127.0.0.1:2", "TENURE_NODE_ID=from-env", "TENURE_MAX_TTL=30s"},
	}
	c.nodes = append(c.nodes, nd)
	if err := c.startAll(t, 0); err != nil {
		t.Fatalf("start the configured server: %v", err)
	}
	l := c.leader(t)
	st := c.mustStatus(t, l)

	// acquireCase acquires key with ttl through the leader: the error code
	// it gets ("" when granted) is got, wantCode want.
	acquireCase := func(key, ttl, wantCode string) func() (string, string) {
		return func() (string, string) { return acquireError(t, c, l, key, ttl), wantCode }
	}
	tests := []struct {
		name  string
		check func() (got, want string)
	}{
		{
			name:  "flag over environment over file: node-id",
			check: func() (string, string) { return st.NodeID, "from-flag" },
		},
		{
			name:  "environment over file: http-addr",
			check: func() (string, string) { return st.LeaderHTTPAddr, envHTTP },
		},
		{name: "file: min-ttl 3s refuses a 2s TTL", check: acquireCase("config/short", "2s", "invalid_ttl")},
		{name: "file: min-ttl 3s grants a 3s TTL", check: acquireCase("config/min", "3s", "")},
		{name: "environment over file: max-ttl 30s grants a 25s TTL", check: acquireCase("config/long", "25s", "")},
		{name: "environment over file: max-ttl 30s refuses a 31s TTL", check: acquireCase("config/too-long", "31s", "invalid_ttl")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := tt.check(); got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
	if r, err := c.try(fileHTTP, http.MethodGet, "/healthz", nil); err == nil {
		t.Errorf("the file's http-addr %s answers (%v); want only the environment's %s to", fileHTTP, r, envHTTP)
	}

	t.Run("bad configurations are refused", testBadConfigRefused)
}

// testBadConfigRefused: a server given a bad setting exits at once with a
// non-zero status and says which setting is wrong.
func testBadConfigRefused(t *testing.T) {
	dir := t.TempDir()
	ports, err := harness.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	addrs := []string{
		"-http-addr", harness.Loopback(ports[0]),
		"-raft-addr", harness.Loopback(ports[1]),
		"-gossip-addr", harness.Loopback(ports[2]),
		"-bootstrap-expect", "1",
	}
	unknownKey := filepath.Join(dir, "unknown-key.json")
	writeJSON(t, unknownKey, map[string]any{"node-id": "n1", "min_ttl": "5s"})
	badValue := filepath.Join(dir, "bad-value.json")
	writeJSON(t, badValue, map[string]any{"node-id": "n1", "election-timeout": "soon"})

	tests := []struct {
		name string
		args []string
		env  []string
		want string // in the output
	}{
		{
			name: "min-ttl below twice election-timeout",
			args: []string{"-election-timeout", "1s", "-heartbeat-timeout", "1s", "-min-ttl", "1500ms"},
			want: "min-ttl",
		},
		{
			name: "min-ttl from the environment below twice election-timeout",
			args: []string{"-election-timeout", "500ms", "-heartbeat-timeout", "500ms"},
			env:  []string{"TENURE_MIN_TTL=900ms"},
			want: "min-ttl",
		},
		{
			name: "unknown key in the config file",
			args: []string{"-config", unknownKey},
			want: `"min_ttl"`,
		},
		{
			name: "unparsable duration in the config file",
			args: []string{"-config", badValue},
			want: "election-timeout",
		},
		{
			name: "unparsable duration in the environment",
			env:  []string{"TENURE_MAX_TTL=forever"},
			want: "TENURE_MAX_TTL",
		},
		{
			name: "missing config file",
			args: []string{"-config", filepath.Join(dir, "missing.json")},
			want: "missing.json",
		},
		{
			name: "unknown flag",
			args: []string{"-min-tll", "5s"},
			want: "min-tll",
		},
		{
			// More than any limit of open files can be (Linux caps it
			// near 2^30).
			name: "connection caps past the limit of open files",
			args: []string{"-http-max-conns", "2000000000", "-http-max-conns-per-client", "10"},
			want: "RLIMIT_NOFILE",
		},
		{
			name: "raft cap per client above its total",
			args: []string{"-raft-max-conns", "10", "-raft-max-conns-per-client", "20"},
			want: "raft-max-conns-per-client",
		},
	}
	for k, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"server", "-node-id", "n1", "-data-dir", filepath.Join(dir, "data", string(rune('a'+k)))}, addrs...)
			args = append(args, tt.args...)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, args...)
			cmd.Env = append(cleanEnv(), tt.env...)
			cmd.SysProcAttr = childProcAttr()
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("tenure %s still ran after 20s; want it to refuse the configuration; output:\n%s", strings.Join(args, " "), out)
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Errorf("tenure %s: got %v, want a non-zero exit status", strings.Join(args, " "), err)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("output does not name %s:\n%s", tt.want, out)
			}
			t.Logf("exit %v: %s", err, strings.TrimSpace(string(out)))
		})
	}
}

// acquireError acquires key for a fresh holder through node i and returns
// the error code of the answer, "" for a grant.
func acquireError(t *testing.T, c *cluster, i int, key, ttl string) string {
	t.Helper()
	r := c.call(t, i, http.MethodPut, "/v1/leases/"+key, wire.AcquireBody{Holder: "config-test", TTL: ttl})
	if r.Status == http.StatusCreated {
		return ""
	}
	var e apiError
	r.decode(t, &e)
	return e.Error
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// refusedTimeout bounds how long a server that must refuse to start may
// run before it exits.
const refusedTimeout = 30 * time.Second

// startToExit starts nd and waits up to timeout for it to exit. It
// returns its process, and whether it exited in time.
func startToExit(t *testing.T, nd *node, timeout time.Duration) (*process, bool) {
	t.Helper()
	if err := nd.start(); err != nil {
		t.Fatal(err)
	}
	p := nd.running()
	select {
	case <-p.done:
		return p, true
	case <-time.After(timeout):
		return p, false
	}
}

// runToExit starts node i's binary with args (its own log file named after
// name) and waits for it to exit; it fails t if it still runs after
// refusedTimeout. It returns the exit code and the log.
func (c *cluster) runToExit(t *testing.T, i int, name string, args []string) (int, string) {
	t.Helper()
	nd := c.nodes[i]
	probe := &node{id: nd.id, args: args, logPath: filepath.Join(c.dir, nd.id+"-"+name+".log")}
	p, exited := startToExit(t, probe, refusedTimeout)
	if !exited {
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%s (%s) still ran after %v; log:\n%s", nd.id, name, refusedTimeout, tail(probe.logPath, 30))
	}
	log, _ := os.ReadFile(probe.logPath)
	var exit *exec.ExitError
	if p.err == nil {
		return 0, string(log)
	}
	if errors.As(p.err, &exit) {
		return exit.ExitCode(), string(log)
	}
	t.Fatalf("%s (%s): %v", nd.id, name, p.err)
	return 0, ""
}

// wantRefused checks that a server exited non-zero with a message that
// holds every part, and without a panic trace.
func wantRefused(t *testing.T, code int, log string, parts ...string) {
	t.Helper()
	if code != 78 {
		t.Errorf("server exited with status %d, want 78 (refused); log:\n%s", code, log)
	}
	for _, p := range parts {
		if !strings.Contains(log, p) {
			t.Errorf("log does not mention %q:\n%s", p, log)
		}
	}
	if strings.Contains(log, "\npanic:") || strings.Contains(log, "goroutine ") {
		t.Errorf("log holds a panic trace:\n%s", log)
	}
}

// clusterIDs waits until every running node reports the same cluster id
// in /v1/status and records it in its identity file, and returns it.
func (c *cluster) clusterID(t *testing.T) string {
	t.Helper()
	var id string
	poll.WaitFor(t, electionTimeout, func() error {
		id = ""
		return c.eachStatus(func(i int, st status) error {
			nd := c.nodes[i]
			if st.ClusterID == "" || (id != "" && st.ClusterID != id) {
				return fmt.Errorf("%s reports cluster id %q (others %q)", nd.id, st.ClusterID, id)
			}
			id = st.ClusterID
			file, _, err := tcluster.ReadIdentity(nd.dataDir)
			if err != nil || file.NodeID != nd.id || file.ClusterID != id {
				return fmt.Errorf("%s's identity file: %+v, %v; want node %s cluster %s", nd.id, file, err, nd.id, id)
			}
			return nil
		})
	})
	return id
}

// fillLog writes n acquisitions with metadata, so that raft.db spans many
// pages of log entries.
func (c *cluster) fillLog(t *testing.T, i, n int) {
	t.Helper()
	meta := map[string]string{"pad": strings.Repeat("x", 900)}
	for k := 0; k < n; k++ {
		r := c.call(t, i, http.MethodPut, fmt.Sprintf("/v1/leases/fill/%d", k), wire.AcquireBody{Holder: "filler", TTL: "1m", Metadata: meta})
		if r.Status != http.StatusCreated {
			t.Fatalf("acquire fill/%d: %v", k, r)
		}
	}
}

// dbDamage is one way to break a stopped server's raft.db.
type dbDamage struct {
	name  string
	apply func(t *testing.T, path string)
	want  []string
}

func noiseInTheMiddle(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const noise = 64 << 10
	if len(b) < 4*noise {
		t.Fatalf("raft.db is %d bytes, too small for noise in its middle", len(b))
	}
	at := (len(b)/2 - noise/2) &^ 4095
	if _, err := rand.Read(b[at : at+noise]); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func truncateHalf(t *testing.T, path string) {
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, info.Size()/2); err != nil {
		t.Fatal(err)
	}
}

func zeroed(t *testing.T, path string) {
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, info.Size()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Guarantee: a server never starts on a damaged raft.db, a data dir of
// another server, or a data dir whose Raft state (term and vote) is gone;
// it exits non-zero with a message naming the file and the remedy, never a
// panic. The same data dir, put back intact, starts and rejoins; a server
// removed from the cluster with its data dir wiped joins again as new.
func TestServerRefusesBadDataDir(t *testing.T) {
	c, l := startLedCluster(t, 3)
	id := c.clusterID(t)
	cmd := exec.Command(binary, "status", "-http-addr", c.nodes[l].httpAddr)
	cmd.Env = cleanEnv()
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), id) {
		t.Errorf("tenure status: %v, output %q; want it to show cluster id %s", err, out, id)
	}
	c.fillLog(t, l, 300)
	f := c.followers(l)[0]
	nd := c.nodes[f]
	c.stop(t, f)
	dbPath := filepath.Join(nd.dataDir, "raft.db")
	intact, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	restore := func(t *testing.T) {
		t.Helper()
		if err := os.WriteFile(dbPath, intact, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	damaged := []string{dbPath + " is damaged", "remove-server -force " + nd.id, "empty data dir"}
	lost := []string{"has been a member of cluster " + id, "remove-server -force " + nd.id, "-allow-lost-raft-state"}
	for _, d := range []dbDamage{
		{name: "noise", apply: noiseInTheMiddle, want: damaged},
		{name: "truncated", apply: truncateHalf, want: damaged},
		{name: "zeroed", apply: zeroed, want: damaged},
		{name: "emptied", apply: func(t *testing.T, path string) { os.Truncate(path, 0) }, want: lost},
		{name: "deleted", apply: func(t *testing.T, path string) { os.Remove(path) }, want: lost},
	} {
		t.Run(d.name, func(t *testing.T) {
			restore(t)
			d.apply(t, dbPath)
			code, log := c.runToExit(t, f, d.name, nd.args)
			wantRefused(t, code, log, d.want...)
		})
	}

	t.Run("another node id", func(t *testing.T) {
		restore(t)
		args := append(append([]string{}, nd.args...), "-node-id", "s2")
		code, log := c.runToExit(t, f, "other-id", args)
		wantRefused(t, code, log, "belongs to server "+nd.id, "-node-id "+nd.id)
	})

	t.Run("intact restart", func(t *testing.T) {
		restore(t)
		c.restart(t, f)
		l = c.leader(t)
		if got := c.clusterID(t); got != id {
			t.Errorf("cluster id after restart %q, want %q", got, id)
		}
		if got := c.get(t, f, "fill/0"); got.Holder != "filler" {
			t.Errorf("fill/0 after restart: %+v", got)
		}
	})
}

// Guarantee: the safe procedure for a server whose Raft state is lost
// works: removed from the cluster, it starts with -allow-lost-raft-state
// on its data dir (or on a wiped data dir, without the flag) and rejoins
// as a new member, with the cluster's state and the same cluster id. The
// removal is forced (the servers were in contact a moment ago, and it
// leaves fewer voters than were bootstrapped); both are readmitted as the
// remedy says (the leader would readmit them on its own after a minute).
func TestServerRejoinsAfterRemovalWithLostState(t *testing.T) {
	c, l := startLedCluster(t, 3)
	id := c.clusterID(t)
	c.acquire(t, l, "rejoin/before", "worker", "5m", http.StatusCreated)
	fs := c.followers(l)
	for _, f := range fs {
		c.stop(t, f)
		r := c.call(t, l, http.MethodDelete, "/v1/operator/servers/"+c.nodes[f].id+"?force=true", nil)
		if r.Status != http.StatusOK {
			t.Fatalf("DELETE /v1/operator/servers/%s: %v", c.nodes[f].id, r)
		}
	}
	// The first loses raft.db and starts with the flag, the second starts
	// on a wiped data dir.
	flagged, wiped := c.nodes[fs[0]], c.nodes[fs[1]]
	if err := os.Remove(filepath.Join(flagged.dataDir, "raft.db")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(wiped.dataDir); err != nil {
		t.Fatal(err)
	}
	args := flagged.args
	flagged.args = append(append([]string{}, args...), "-allow-lost-raft-state")
	c.restart(t, fs[0])
	flagged.args = args
	c.restart(t, fs[1])
	c.readmit(t, l, flagged)
	c.readmit(t, l, wiped)
	poll.WaitFor(t, 2*time.Minute, func() error {
		st, err := c.status(l)
		if err != nil {
			return err
		}
		for _, nd := range []*node{flagged, wiped} {
			if srv, ok := serverOf(st, nd.id); !ok || srv.Suffrage != "voter" {
				return fmt.Errorf("leader's configuration %+v has no voter %s", st.Servers, nd.id)
			}
		}
		return nil
	})
	if got := c.clusterID(t); got != id {
		t.Errorf("cluster id after rejoin %q, want %q", got, id)
	}
	for _, f := range fs {
		poll.WaitFor(t, 10*time.Second, func() error {
			r := c.call(t, f, http.MethodGet, "/v1/leases/rejoin/before?stale=true", nil)
			if r.Status != http.StatusOK || !bytes.Contains(r.Body, []byte(`"worker"`)) {
				return fmt.Errorf("stale read on %s: %v", c.nodes[f].id, r)
			}
			return nil
		})
	}
	// Both have Raft state again: a restart without the flag works.
	c.stop(t, fs[0])
	c.restart(t, fs[0])
	c.leader(t)
}
