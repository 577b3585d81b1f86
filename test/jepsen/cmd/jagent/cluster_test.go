//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The servers of the workload test: elections twice as fast as the
// defaults and a minimum TTL of 1s, as test/integration runs them.
var fastTimings = []string{
	"-heartbeat-timeout", "500ms",
	"-election-timeout", "500ms",
	"-leader-lease-timeout", "500ms",
	"-min-ttl", "1s",
}

// clusterStartTimeout bounds how long three servers may take to elect
// an established leader that all of them know.
const clusterStartTimeout = 30 * time.Second

var (
	buildOnce sync.Once
	buildDir  string
	tenureBin string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// buildTenure builds ./cmd/tenure once per test binary.
func buildTenure(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "jagent-test-"); buildErr != nil {
			return
		}
		tenureBin = filepath.Join(buildDir, "tenure")
		cmd := exec.Command("go", "build", "-o", tenureBin, "./cmd/tenure")
		cmd.Dir = filepath.Join("..", "..", "..", "..") // the module root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/tenure: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return tenureBin
}

// testCluster is three `tenure server` processes on loopback.
type testCluster struct {
	urls   []string // HTTP base URLs
	gossip []string // gossip addresses
	logs   []string
}

// startCluster starts three servers that bootstrap together, waits until
// they agree on an established leader, and kills them when t ends.
func startCluster(t *testing.T) *testCluster {
	t.Helper()
	bin := buildTenure(t)
	dir := t.TempDir()
	ports := freePorts(t, 9)
	c := &testCluster{}
	for i := range 3 {
		c.urls = append(c.urls, "http://"+loopback(ports[3*i]))
		c.gossip = append(c.gossip, loopback(ports[3*i+2]))
		c.logs = append(c.logs, filepath.Join(dir, fmt.Sprintf("n%d.log", i+1)))
	}
	var procs []*exec.Cmd
	t.Cleanup(func() {
		for _, p := range procs {
			p.Process.Kill()
			p.Wait()
		}
		if t.Failed() {
			for _, l := range c.logs {
				b, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", l, tailLines(string(b), 30))
			}
		}
	})
	for i := range 3 {
		var others []string
		for j, g := range c.gossip {
			if j != i {
				others = append(others, g)
			}
		}
		args := append([]string{"server",
			"-node-id", fmt.Sprintf("n%d", i+1),
			"-data-dir", filepath.Join(dir, fmt.Sprintf("n%d", i+1)),
			"-http-addr", loopback(ports[3*i]),
			"-raft-addr", loopback(ports[3*i+1]),
			"-gossip-addr", c.gossip[i],
			"-bootstrap-expect", "3",
			"-join", strings.Join(others, ","),
		}, fastTimings...)
		logf, err := os.Create(c.logs[i])
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.Env = cleanEnv()
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start n%d: %v", i+1, err)
		}
		logf.Close() // the child has its own descriptor
		procs = append(procs, cmd)
	}
	c.waitLeader(t)
	return c
}

// waitLeader waits until every server names the same leader, and that
// leader says it is ready.
func (c *testCluster) waitLeader(t *testing.T) {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(clusterStartTimeout)
	var last string
	for time.Now().Before(deadline) {
		leaders := map[string]bool{}
		ready := false
		for _, u := range c.urls {
			var st struct {
				Role     string `json:"role"`
				LeaderID string `json:"leader_id"`
				Ready    bool   `json:"ready"`
			}
			resp, err := hc.Get(u + "/v1/status")
			if err != nil {
				last = err.Error()
				leaders[""] = true
				continue
			}
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err != nil {
				last = err.Error()
				leaders[""] = true
				continue
			}
			leaders[st.LeaderID] = true
			ready = ready || (st.Role == "leader" && st.Ready)
		}
		if len(leaders) == 1 && !leaders[""] && ready {
			return
		}
		last = fmt.Sprintf("leaders seen %v, ready %v (%s)", leaders, ready, last)
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no established leader after %v: %s", clusterStartTimeout, last)
}

// cleanEnv is the environment without TENURE_* variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TENURE_") {
			env = append(env, kv)
		}
	}
	return env
}

// freePorts returns n distinct loopback ports that were free for TCP and
// UDP (gossip binds both) a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var (
		ports   []int
		closers []io.Closer
	)
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries > 10*n {
			t.Fatalf("found only %d free ports of %d", len(ports), n)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closers = append(closers, ln)
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", loopback(port))
		if err != nil {
			continue
		}
		closers = append(closers, pc)
		ports = append(ports, port)
	}
	return ports
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
