package browser

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/test/harness"
)

// Timings of the test servers, as in test/integration: failovers of about
// a second, a minimum TTL that covers two election timeouts.
var fastTimings = []string{
	"-heartbeat-timeout", "500ms",
	"-election-timeout", "500ms",
	"-leader-lease-timeout", "500ms",
	"-min-ttl", "1s",
	"-server-stabilization-time", "1s",
}

const startTimeout = 30 * time.Second

var poll = harness.Poller{Interval: 50 * time.Millisecond}

// node is one `tenure server` process.
type node struct {
	id, httpAddr, raftAddr, gossipAddr, logPath string
	cmd                                         *exec.Cmd
	done                                        chan struct{}
}

// cluster is three servers with TLS on the API and Raft, and ACLs on
// (default deny), started from the binary that TestMain built.
type cluster struct {
	dir    string
	caFile string
	nodes  []*node
	http   *http.Client
	// boot is the bootstrap (management) token's secret.
	boot string

	mu sync.Mutex
}

// tenure runs the built binary with args and fails t when it fails.
func tenure(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(binary, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("tenure %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// startCluster starts three servers on loopback with TLS and ACLs,
// bootstraps the ACL system and waits for an established leader. Every
// process is killed when t ends.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{dir: t.TempDir()}
	pki := filepath.Join(c.dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		t.Fatal(err)
	}
	tenure(t, "tls", "ca", "create", "-dir", pki, "-days", "2")
	c.caFile = filepath.Join(pki, "tenure-ca.pem")
	pem, err := os.ReadFile(c.caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c.http = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			c.killNode(nd)
		}
		c.http.CloseIdleConnections()
		if t.Failed() {
			for _, nd := range c.nodes {
				b, _ := os.ReadFile(nd.logPath)
				lines := strings.Split(string(b), "\n")
				t.Logf("last lines of %s's log:\n%s", nd.id, strings.Join(lines[max(0, len(lines)-30):], "\n"))
			}
		}
	})
	ports, err := harness.FreePorts(9)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		id := fmt.Sprintf("n%d", i+1)
		tenure(t, "tls", "cert", "create", "-server", "-node-id", id, "-dir", pki, "-days", "2")
		c.nodes = append(c.nodes, &node{id: id, httpAddr: harness.Loopback(ports[3*i]), raftAddr: harness.Loopback(ports[3*i+1]),
			gossipAddr: harness.Loopback(ports[3*i+2]), logPath: filepath.Join(c.dir, id+".log")})
	}
	for i, nd := range c.nodes {
		var joins []string
		for j, o := range c.nodes {
			if j != i {
				joins = append(joins, o.gossipAddr)
			}
		}
		args := []string{"server", "-node-id", nd.id, "-data-dir", filepath.Join(c.dir, nd.id),
			"-http-addr", nd.httpAddr, "-raft-addr", nd.raftAddr, "-gossip-addr", nd.gossipAddr,
			"-bootstrap-expect", "3", "-join", strings.Join(joins, ","),
			// TLS on the API and Raft; the browser has no client
			// certificate, so the API does not ask for one.
			"-tls-cert-file", filepath.Join(pki, "tenure-server-"+nd.id+".pem"),
			"-tls-key-file", filepath.Join(pki, "tenure-server-"+nd.id+"-key.pem"),
			"-tls-ca-file", c.caFile,
			"-acl-enabled"}
		args = append(args, fastTimings...)
		log, err := os.Create(nd.logPath)
		if err != nil {
			t.Fatal(err)
		}
		nd.cmd = exec.Command(binary, args...)
		nd.cmd.Stdout, nd.cmd.Stderr = log, log
		nd.cmd.Env = cleanEnv()
		if err := nd.cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", nd.id, err)
		}
		nd.done = make(chan struct{})
		go func() {
			nd.cmd.Wait()
			log.Close()
			close(nd.done)
		}()
	}
	ctx := harness.Context(t, startTimeout)
	poll.WaitFor(t, startTimeout, func() error {
		tok, err := c.client(t, "admin", "").ACL().Bootstrap(ctx)
		if err != nil {
			return err
		}
		c.boot = tok.SecretID
		return nil
	})
	c.leader(t)
	return c
}

// cleanEnv is the test's environment without TENURE_* variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TENURE_") {
			env = append(env, kv)
		}
	}
	return env
}

func (c *cluster) addrs() []string {
	var out []string
	for _, nd := range c.nodes {
		select {
		case <-nd.done:
		default:
			out = append(out, nd.httpAddr)
		}
	}
	return out
}

// client is a Go client of the cluster over https as holder, with token
// (the bootstrap token when empty and bootstrapped).
func (c *cluster) client(t *testing.T, holder, token string) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Addresses = c.addrs()
	cfg.Holder = holder
	cfg.Timeout = 5 * time.Second
	cfg.RetryMax = 2
	cfg.TLS = client.TLSConfig{CAFile: c.caFile}
	cfg.Token = token
	if token == "" {
		cfg.Token = c.boot
	}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	return cl
}

// leader waits until every live server names the same established leader
// and returns its index in c.nodes.
func (c *cluster) leader(t *testing.T) int {
	t.Helper()
	var lead int
	poll.WaitFor(t, startTimeout, func() error {
		ids := map[string]bool{}
		for _, nd := range c.nodes {
			select {
			case <-nd.done:
				continue
			default:
			}
			st, _, err := c.nodeClient(t, nd).Status(context.Background())
			if err != nil {
				return err
			}
			ids[st.LeaderID] = true
			if st.Ready {
				lead, _ = strconv.Atoi(strings.TrimPrefix(nd.id, "n"))
			}
		}
		if len(ids) != 1 || ids[""] || lead == 0 {
			return errors.New("no established leader that every server knows")
		}
		return nil
	})
	return lead - 1
}

// nodeClient is a client of one server only.
func (c *cluster) nodeClient(t *testing.T, nd *node) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{nd.httpAddr}
	cfg.Timeout = 3 * time.Second
	cfg.RetryMax = 0
	cfg.TLS = client.TLSConfig{CAFile: c.caFile}
	cfg.Token = c.boot
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	return cl
}

// killNode SIGKILLs a server and waits until it is gone.
func (c *cluster) killNode(nd *node) {
	if nd.cmd == nil || nd.cmd.Process == nil {
		return
	}
	nd.cmd.Process.Kill()
	<-nd.done
}

// url is the https URL of path on node i.
func (c *cluster) url(i int, path string) string {
	return "https://" + c.nodes[i].httpAddr + path
}
