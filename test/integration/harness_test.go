package integration

import (
	"errors"
	"fmt"
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

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/test/harness"
)

// binary is the tenure binary that TestMain builds.
var binary string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "tenure-integration-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: temp dir: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "tenure")
	start := time.Now()
	build := exec.Command("go", "build", "-o", binary, "./cmd/tenure")
	build.Dir = filepath.Join("..", "..") // the module root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "integration: go build ./cmd/tenure: %v\n%s", err, out)
		return 1
	}
	built := time.Since(start)
	code := m.Run()
	stopBrowser() // the page tests' Chromium, when one was started
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "integration: go build ./cmd/tenure took %v\n", built.Round(time.Millisecond))
	}
	return code
}

// Timings of every test server: elections twice as fast as the defaults,
// so that a failover takes about a second, but a leader lease long enough
// that a busy machine (the race detector, parallel builds) does not make
// leaders step down for nothing; and a minimum TTL that still covers two
// election timeouts, as the server demands; and a leader that promotes a
// caught-up non-voter after one second rather than ten, so that a test
// that sees none promoted has waited long enough.
var fastTimings = []string{
	"-heartbeat-timeout", "500ms",
	"-election-timeout", "500ms",
	"-leader-lease-timeout", "500ms",
	"-min-ttl", "1s",
	"-server-stabilization-time", "1s",
}

const (
	// startTimeout bounds how long a cluster may take to elect its first
	// leader (gossip join retries every 2s).
	startTimeout = 30 * time.Second
	// electionTimeout bounds how long a running cluster may take to have an
	// established leader that every live node knows.
	electionTimeout = 15 * time.Second
	// stopTimeout bounds a graceful shutdown after SIGTERM.
	stopTimeout = 15 * time.Second
	// pollInterval is the pause between two polls of a condition: each
	// poll may ask every server over HTTP.
	pollInterval = 50 * time.Millisecond
)

// poll waits for conditions on the servers (WaitFor) and checks that they
// keep holding (Holds).
var poll = harness.Poller{Interval: pollInterval}

// node is one `tenure server` process, or the settings to start it again.
type node struct {
	id         string
	dataDir    string
	httpAddr   string
	raftAddr   string
	gossipAddr string
	// args are the full arguments after "server"; restart reuses them.
	args []string
	// env is added to the filtered environment of the process.
	env     []string
	logPath string

	mu   sync.Mutex
	proc *process // nil while not running
}

// process is one run of a node.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // cmd.Wait's result, set before done is closed
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// cluster is a set of server processes started by one test.
type cluster struct {
	dir   string
	nodes []*node
	http  *http.Client
	// scheme is "http", or "https" for a cluster started with TLS.
	scheme string
	// nodeArgs, when set, adds flags of a node's own (its certificate).
	nodeArgs func(t *testing.T, nd *node) []string
	// token is the ACL token secret the harness's own requests carry, on
	// clusters started with -acl-enabled.
	token string
	// clientTLS, when set, is what the Go clients (newClient) and the CLI
	// (tenureCLI) of the test trust and present, over https.
	clientTLS *client.TLSConfig
}

// startCluster starts n servers on loopback that bootstrap together
// (-bootstrap-expect n, each joining the others' gossip addresses), waits
// for an established leader, and kills every process when t ends. It retries
// with fresh ports when one of them turned out to be taken.
func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	return newCluster(t).boot(t, n)
}

// startLedCluster is startCluster that also returns the index of the
// leader it waited for.
func startLedCluster(t *testing.T, n int) (*cluster, int) {
	t.Helper()
	c := startCluster(t, n)
	return c, c.leader(t)
}

// startServers is startCluster without the wait for a leader, with extra
// flags for every server.
func startServers(t *testing.T, n int, extra ...string) *cluster {
	t.Helper()
	return newCluster(t).start(t, n, extra...)
}

// boot starts n servers that bootstrap together and waits for their
// leader, as startCluster says.
func (c *cluster) boot(t *testing.T, n int) *cluster {
	t.Helper()
	c.start(t, n)
	c.leader(t)
	return c
}

// start starts n servers that bootstrap together, with c.nodeArgs and the
// extra flags, without waiting for a leader.
func (c *cluster) start(t *testing.T, n int, extra ...string) *cluster {
	t.Helper()
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		nodes, err := c.plan(n)
		if err != nil {
			t.Fatalf("pick ports: %v", err)
		}
		var joins []string
		for _, nd := range nodes {
			joins = append(joins, nd.gossipAddr)
		}
		for i, nd := range nodes {
			others := make([]string, 0, n-1)
			for j, g := range joins {
				if j != i {
					others = append(others, g)
				}
			}
			nd.args = append(c.baseArgs(t, nd), "-bootstrap-expect", strconv.Itoa(n), "-join", strings.Join(others, ","))
			nd.args = append(nd.args, extra...)
		}
		first := len(c.nodes)
		c.nodes = append(c.nodes, nodes...)
		lastErr = c.startAll(t, first)
		if lastErr == nil {
			return c
		}
		if !errors.Is(lastErr, errAddrInUse) {
			t.Fatalf("start cluster: %v", lastErr)
		}
		t.Logf("start cluster, attempt %d: %v; retrying with new ports", attempt, lastErr)
		for i := first; i < len(c.nodes); i++ {
			c.kill(t, i)
			os.RemoveAll(c.nodes[i].dataDir) // the next attempt starts afresh
		}
		c.nodes = c.nodes[:first]
	}
	t.Fatalf("start cluster: %v", lastErr)
	return nil
}

// newCluster makes an empty cluster whose processes die with t.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{
		dir:    t.TempDir(),
		http:   &http.Client{Timeout: 20 * time.Second},
		scheme: "http",
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.killQuietly(i)
		}
		c.http.CloseIdleConnections()
		if t.Failed() {
			for _, nd := range c.nodes {
				t.Logf("last lines of %s's log (%s):\n%s", nd.id, nd.logPath, tail(nd.logPath, 40))
			}
		}
	})
	return c
}

// plan names n new nodes after the existing ones and gives them free ports
// and data dirs.
func (c *cluster) plan(n int) ([]*node, error) {
	ports, err := harness.FreePorts(3 * n)
	if err != nil {
		return nil, err
	}
	nodes := make([]*node, n)
	for i := range nodes {
		id := fmt.Sprintf("n%d", len(c.nodes)+i+1)
		nodes[i] = &node{
			id:         id,
			dataDir:    filepath.Join(c.dir, id, "data"),
			httpAddr:   harness.Loopback(ports[3*i]),
			raftAddr:   harness.Loopback(ports[3*i+1]),
			gossipAddr: harness.Loopback(ports[3*i+2]),
			logPath:    filepath.Join(c.dir, id+".log"),
		}
	}
	return nodes, nil
}

// baseArgs are the flags every harness node gets: identity, addresses, data
// dir and the fast timings.
func (nd *node) baseArgs() []string {
	args := []string{
		"-node-id", nd.id,
		"-data-dir", nd.dataDir,
		"-http-addr", nd.httpAddr,
		"-raft-addr", nd.raftAddr,
		"-gossip-addr", nd.gossipAddr,
	}
	return append(args, fastTimings...)
}

// baseArgs are nd.baseArgs plus the flags of c.nodeArgs.
func (c *cluster) baseArgs(t *testing.T, nd *node) []string {
	t.Helper()
	args := nd.baseArgs()
	if c.nodeArgs != nil {
		args = append(args, c.nodeArgs(t, nd)...)
	}
	return args
}

// addNode starts one more server with the harness's addresses and the extra
// flags (e.g. "-join", addr, "-non-voter") and waits until it serves HTTP.
func (c *cluster) addNode(t *testing.T, extra ...string) int {
	t.Helper()
	for attempt := 1; ; attempt++ {
		nodes, err := c.plan(1)
		if err != nil {
			t.Fatalf("pick ports: %v", err)
		}
		nd := nodes[0]
		nd.args = append(c.baseArgs(t, nd), extra...)
		c.nodes = append(c.nodes, nd)
		i := len(c.nodes) - 1
		err = c.startAll(t, i)
		if err == nil {
			return i
		}
		c.kill(t, i)
		os.RemoveAll(nd.dataDir) // the next attempt starts afresh
		c.nodes = c.nodes[:i]
		if !errors.Is(err, errAddrInUse) || attempt == 3 {
			t.Fatalf("start %s: %v", nd.id, err)
		}
		t.Logf("start %s, attempt %d: %v; retrying with new ports", nd.id, attempt, err)
	}
}

// startAll starts the nodes from index first on and waits until each
// answers /healthz.
func (c *cluster) startAll(t *testing.T, first int) error {
	t.Helper()
	for _, nd := range c.nodes[first:] {
		if err := nd.start(); err != nil {
			return err
		}
	}
	for _, nd := range c.nodes[first:] {
		if err := c.waitServing(nd); err != nil {
			return err
		}
	}
	return nil
}

var errAddrInUse = errors.New("address already in use")

// bootstrapACL bootstraps the ACL system through cl, trying again while
// the servers start and elect a leader, for up to timeout, and returns
// the management token.
func bootstrapACL(t *testing.T, cl *client.Client, timeout time.Duration) *client.ACLToken {
	t.Helper()
	ctx := harness.Context(t, timeout)
	var boot *client.ACLToken
	poll.WaitFor(t, timeout, func() error {
		var err error
		boot, err = cl.ACL().Bootstrap(ctx)
		return err
	})
	return boot
}

// start runs the node's process with its args, its log appended to
// logPath. The environment is the test's own minus every TENURE_* variable,
// plus nd.env.
func (nd *node) start() error {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.proc != nil && !nd.proc.exited() {
		return fmt.Errorf("%s is already running", nd.id)
	}
	logFile, err := os.OpenFile(nd.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logFile, "==== %s: tenure server %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(nd.args, " "))
	cmd := exec.Command(binary, append([]string{"server"}, nd.args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(cleanEnv(), nd.env...)
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", nd.id, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	nd.proc = p
	return nil
}

// cleanEnv is the test's environment without TENURE_* variables, so that a
// developer's settings cannot leak into the servers.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TENURE_") {
			env = append(env, kv)
		}
	}
	return env
}

func (nd *node) running() *process {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.proc == nil || nd.proc.exited() {
		return nil
	}
	return nd.proc
}

// waitServing waits until nd answers /healthz, or fails when its process
// exits first (errAddrInUse when its log says a port was taken).
func (c *cluster) waitServing(nd *node) error {
	nd.mu.Lock()
	p := nd.proc
	nd.mu.Unlock()
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		if p.exited() {
			log := tail(nd.logPath, 20)
			if strings.Contains(log, "address already in use") {
				return fmt.Errorf("%s: %w", nd.id, errAddrInUse)
			}
			return fmt.Errorf("%s exited before serving (%v):\n%s", nd.id, p.err, log)
		}
		if r, err := c.try(nd.httpAddr, http.MethodGet, "/healthz", nil); err == nil && r.Status == http.StatusOK {
			return nil
		}
		time.Sleep(pollInterval)
	}
	return fmt.Errorf("%s did not answer /healthz within %v", nd.id, startTimeout)
}

// kill sends SIGKILL to node i's process and waits until it is gone.
func (c *cluster) kill(t *testing.T, i int) {
	t.Helper()
	if err := c.killQuietly(i); err != nil {
		t.Fatalf("kill %s: %v", c.nodes[i].id, err)
	}
}

func (c *cluster) killQuietly(i int) error {
	p := c.nodes[i].running()
	if p == nil {
		return nil
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-p.done
	return nil
}

// stop sends SIGTERM to node i and waits for it to exit; it fails t when
// the server does not exit in time or exits with an error.
func (c *cluster) stop(t *testing.T, i int) {
	t.Helper()
	nd := c.nodes[i]
	p := nd.running()
	if p == nil {
		t.Fatalf("stop %s: not running", nd.id)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("stop %s: %v", nd.id, err)
	}
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		c.killQuietly(i)
		t.Fatalf("stop %s: still running %v after SIGTERM; killed", nd.id, stopTimeout)
	}
	if p.err != nil {
		t.Errorf("stop %s: exited with %v after SIGTERM, want exit status 0", nd.id, p.err)
	}
}

// readmit asks node via to readmit the removed server nd, until it
// answers 200 (within 30 seconds).
func (c *cluster) readmit(t *testing.T, via int, nd *node) {
	t.Helper()
	poll.WaitFor(t, 30*time.Second, func() error {
		if r := c.call(t, via, http.MethodPost, "/v1/operator/servers/"+nd.id+"/readmit", nil); r.Status != http.StatusOK {
			return fmt.Errorf("readmit %s: %v", nd.id, r)
		}
		return nil
	})
}

// restart starts node i again with the same flags, environment and data
// dir, and waits until it serves HTTP. Its ports are its own, so a port
// that is briefly still taken is retried.
func (c *cluster) restart(t *testing.T, i int) {
	t.Helper()
	nd := c.nodes[i]
	var err error
	for attempt := 1; attempt <= 5; attempt++ {
		if err = nd.start(); err != nil {
			t.Fatalf("restart %s: %v", nd.id, err)
		}
		if err = c.waitServing(nd); err == nil || !errors.Is(err, errAddrInUse) {
			break
		}
		t.Logf("restart %s, attempt %d: %v", nd.id, attempt, err)
		time.Sleep(time.Duration(attempt) * 200 * time.Millisecond) // let the old sockets go
	}
	if err != nil {
		t.Fatalf("restart %s: %v", nd.id, err)
	}
}

// leader waits until one running node reports role=leader and ready=true,
// and every running node names it as leader with its HTTP address; it
// returns the leader's index.
func (c *cluster) leader(t *testing.T) int {
	t.Helper()
	var found int
	poll.WaitFor(t, electionTimeout, func() error {
		found = -1
		statuses := map[int]status{}
		views := map[string]string{}
		err := c.eachStatus(func(i int, st status) error {
			statuses[i], views[c.nodes[i].id] = st, st.LeaderID
			if st.Role == "leader" && st.Ready {
				found = i
			}
			return nil
		})
		if err != nil {
			return err
		}
		if found < 0 {
			return fmt.Errorf("no established leader; leader ids seen: %v", views)
		}
		want := c.nodes[found]
		for i, st := range statuses {
			if st.LeaderID != want.id || st.LeaderHTTPAddr != want.httpAddr {
				return fmt.Errorf("%s sees leader %q at %q, want %q at %q", c.nodes[i].id, st.LeaderID, st.LeaderHTTPAddr, want.id, want.httpAddr)
			}
		}
		return nil
	})
	return found
}

// eachStatus calls f with the status of each running node, in order, and
// returns the first error of a status request or of f.
func (c *cluster) eachStatus(f func(i int, st status) error) error {
	for i, nd := range c.nodes {
		if nd.running() == nil {
			continue
		}
		st, err := c.status(i)
		if err != nil {
			return err
		}
		if err := f(i, st); err != nil {
			return err
		}
	}
	return nil
}

// followers lists the running nodes other than leader.
func (c *cluster) followers(leader int) []int {
	var out []int
	for i, nd := range c.nodes {
		if i != leader && nd.running() != nil {
			out = append(out, i)
		}
	}
	return out
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
