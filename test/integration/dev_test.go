package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/test/harness"
)

// devServer is a running `tenure server -dev`.
type devServer struct {
	httpAddr string
	// raftAddr and gossipAddr are the -raft-addr and -gossip-addr given.
	raftAddr, gossipAddr string
	cmd                  *exec.Cmd
	logs                 harness.Buffer
	exited               chan error
}

// startDev starts `tenure server -dev` on free loopback ports with extra
// flags; the test's end kills it if it still runs.
func startDev(t *testing.T, extra ...string) *devServer {
	t.Helper()
	ports, err := harness.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	d := &devServer{httpAddr: fmt.Sprintf("127.0.0.1:%d", ports[0]), raftAddr: fmt.Sprintf("127.0.0.1:%d", ports[1]),
		gossipAddr: fmt.Sprintf("127.0.0.1:%d", ports[2]), exited: make(chan error, 1)}
	args := append([]string{"server", "-dev", "-http-addr", d.httpAddr,
		"-raft-addr", d.raftAddr, "-gossip-addr", d.gossipAddr}, extra...)
	d.cmd = exec.Command(binary, args...)
	d.cmd.Env = cleanEnv()
	d.cmd.Stdout, d.cmd.Stderr = &d.logs, &d.logs
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.exited <- d.cmd.Wait() }()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			d.cmd.Process.Kill()
			<-d.exited
		}
	})
	return d
}

// use acquires a lease through c and checks that the dev server leads
// alone.
func (d *devServer) use(t *testing.T, c *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, _, err := c.Leases().Acquire(ctx, "dev/k", client.AcquireRequest{Holder: "dev-test", TTL: 5 * time.Second})
	if err != nil {
		t.Fatalf("acquire on the dev server: %v\n%s", err, d.logs.String())
	}
	st, _, err := c.Status(ctx)
	if err != nil || st.LeaderID != "dev" || len(st.Servers) != 1 {
		t.Errorf("status of the dev server = %+v, %v; want the only server, dev, leading", st, err)
	}
	t.Logf("dev server: lease %s token %d", l.Key, l.Token)
}

// stop sends SIGTERM and checks for exit 0 and the data dir gone.
func (d *devServer) stop(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.exited:
		if err != nil {
			t.Errorf("dev server exited with %v after SIGTERM\n%s", err, d.logs.String())
		}
	case <-time.After(stopTimeout):
		t.Fatalf("dev server did not exit within %v of SIGTERM", stopTimeout)
	}
	m := regexp.MustCompile(`data_dir=(\S+)`).FindStringSubmatch(d.logs.String())
	if m == nil {
		t.Fatalf("the dev server did not log its data dir:\n%s", d.logs.String())
	}
	if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("the dev server's data dir %s is still there after exit (%v)", m[1], err)
	}
}

// `tenure server -dev` is one server that elects itself at once: a Go
// client acquires a lease on it within seconds of its start, with no data
// dir given; SIGTERM stops it with exit 0 and its state is gone.
func TestDevServer(t *testing.T) {
	d := startDev(t)
	cfg := client.DefaultConfig()
	cfg.Addresses, cfg.Holder = []string{d.httpAddr}, "dev-test"
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d.use(t, c)
	d.stop(t)
}

// startSecureDev starts `tenure server -dev` with mutual TLS and ACLs on
// and bootstraps its ACLs. tc holds the client certificate called name;
// boot is the management token.
func startSecureDev(t *testing.T, name string) (d *devServer, tc client.TLSConfig, boot *client.ACLToken) {
	t.Helper()
	p := newTestPKI(t)
	cert, key := p.server(t, "dev")
	certFile, keyFile := p.client(t, name)
	d = startDev(t, "-tls-cert-file", cert, "-tls-key-file", key, "-tls-ca-file", p.caFile(), "-tls-verify-incoming", "-acl-enabled")
	tc = client.TLSConfig{CAFile: p.caFile(), CertFile: certFile, KeyFile: keyFile}
	boot = bootstrapACL(t, tlsClient(t, "admin", tc, "https://"+d.httpAddr), startTimeout)
	return d, tc, boot
}

// The same with mutual TLS and ACLs on: bootstrap, then a lease with the
// token, over https.
func TestDevServerWithTLSAndACLs(t *testing.T) {
	d, tc, boot := startSecureDev(t, "app")
	c := tlsClient(t, "dev-test", tc, "https://"+d.httpAddr)
	if _, _, err := c.Status(context.Background()); err == nil {
		t.Error("status without a token succeeded with ACLs on")
	}
	d.use(t, tokenClient(t, "dev-test", boot.SecretID, tc, 0, "https://"+d.httpAddr))
	d.stop(t)
}

// -dev keeps nothing and joins nobody: a data dir or peers with it are a
// usage error, not silently ignored.
func TestDevServerRefusesDataDirAndPeers(t *testing.T) {
	for _, extra := range [][]string{{"-data-dir", t.TempDir()}, {"-join", "127.0.0.1:7502"}} {
		r := runTenure(t, nil, append([]string{"server", "-dev"}, extra...)...)
		if r.code != 2 || !regexp.MustCompile(`-dev .*leave out`).MatchString(r.stderr) {
			t.Errorf("server -dev %v: exit %d, stderr %q; want 2 and what to leave out", extra, r.code, r.stderr)
		}
	}
}
