package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/test/harness"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
)

// pythonTestTimeout bounds the Python client's test run (about 30s).
const pythonTestTimeout = 3 * time.Minute

// TestPythonClient runs the Python client's tests (client/python/tests,
// unittest) against three servers with mutual TLS and ACLs (default deny):
// the client gets the addresses, a token bound to the holder prefix "py-"
// that writes under "py/" (and its workers' presence leases), the CA and a client certificate through the
// environment variables of the CLI, plus a management token (for revokes)
// and the servers' pids (the failover test kills the Raft leader). It
// skips without python3 >= 3.9, and fails then under CI=true.
func TestPythonClient(t *testing.T) {
	python, version := findPython(t)
	c, tc := startSecureCluster(t, 3, "python")
	ctx, cancel := context.WithTimeout(context.Background(), pythonTestTimeout+time.Minute)
	defer cancel()

	boot, _ := c.bootstrapTLS(t, "admin", tc)
	admin := tokenClient(t, "", boot.SecretID, tc, 5*time.Second, c.httpAddrs()...)
	app := policyToken(t, ctx, admin, "python", "py-", []client.ACLRule{
		{Prefix: "", Rights: []string{client.RightRead}},
		{Prefix: "py/", Rights: []string{client.RightWrite}},
		{Prefix: wire.PresencePrefix + "py-", Rights: []string{client.RightWrite}}, // the Python workers' presence leases
	})

	var pids []string
	for _, nd := range c.nodes {
		pids = append(pids, fmt.Sprintf("%s=%d", nd.httpAddr, nd.running().cmd.Process.Pid))
	}
	env := append(append(cleanEnv(), tlsEnv(tc, app.SecretID, c.httpAddrs()...)...),
		"TENURE_TEST_ADMIN_TOKEN="+boot.SecretID,
		"TENURE_TEST_SERVER_PIDS="+strings.Join(pids, ","),
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONUNBUFFERED=1",
	)
	// The fence adapters' tests write to a real PostgreSQL and Redis.
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres"); len(m) > 0 {
		_, dsn := startPostgres(t)
		env = append(env, "TENURE_TEST_POSTGRES_DSN="+dsn)
	}
	if _, err := exec.LookPath("redis-server"); err == nil {
		_, addr := startRedis(t)
		env = append(env, "TENURE_TEST_REDIS_ADDR="+addr)
	}
	out, took, err := runPythonTests(ctx, python, env)
	if err != nil {
		t.Fatalf("python client tests (Python %s) failed after %v: %v\n%s", version, took, err, out)
	}
	// Every cluster test must have run: a skip for want of a cluster would
	// mean the environment did not reach them.
	if strings.Contains(out, "no cluster") || !strings.Contains(out, "\nOK") {
		t.Fatalf("python client tests did not all run against the cluster (took %v):\n%s", took, out)
	}
	if strings.Contains(out, "no store") && os.Getenv("CI") == "true" {
		t.Fatalf("python fence adapter tests skipped for want of a store (PostgreSQL, redis-server, "+
			"python3-psycopg2, python3-redis; `make test` installs them as root): failing under CI=true\n%s", out)
	}
	t.Logf("python client tests (%s, Python %s) passed in %v:\n%s", python, version, took, out)
}

// runPythonTests runs `python3 -m unittest discover` in client/python with
// env, bounded by pythonTestTimeout, and returns its output.
func runPythonTests(ctx context.Context, python string, env []string) (string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, pythonTestTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	cmd.Dir = filepath.Join("..", "..", "client", "python")
	cmd.Env = env
	cmd.SysProcAttr = childProcAttr()
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start).Round(time.Millisecond)
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (limit %v)", ctx.Err(), pythonTestTimeout)
	}
	return string(out), took, err
}

// findPython returns the path and version of python3 when it is 3.9 or
// newer. Without
// one it skips t, or fails it under CI=true (`make test` installs python3
// when it runs as root).
func findPython(t *testing.T) (path, version string) {
	t.Helper()
	missing := func(why string) {
		t.Helper()
		harness.Missing(t, "the Python client's tests need python3 >= 3.9: "+why)
	}
	// The first python3 >= 3.9 that has the fence tests' store drivers
	// (Debian's python3-psycopg2 and python3-redis, which only the
	// system's interpreter sees), else the first python3 >= 3.9.
	var candidates []string
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	if p := "/usr/bin/python3"; len(candidates) == 0 || candidates[0] != p {
		if _, err := os.Stat(p); err == nil {
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		missing("python3 is not on PATH")
	}
	const check = "import sys; print('%d.%d' % sys.version_info[:2]); sys.exit(0 if sys.version_info >= (3, 9) else 1)"
	why := ""
	for _, p := range candidates {
		out, err := exec.Command(p, "-c", check).CombinedOutput()
		if err != nil {
			why = fmt.Sprintf("%s is %s", p, strings.TrimSpace(string(out)))
			continue
		}
		if path == "" {
			path, version = p, strings.TrimSpace(string(out))
		}
		if exec.Command(p, "-c", "import psycopg2, redis").Run() == nil {
			return p, strings.TrimSpace(string(out))
		}
	}
	if path == "" {
		missing(why)
	}
	return path, version
}
