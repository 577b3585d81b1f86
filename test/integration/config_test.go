package integration

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/test/harness"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
