package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
)

// result is the outcome of one run of the binary.
type result struct {
	code           int
	stdout, stderr string
}

// runTenure runs the tenure binary with args to its end, with the test's
// environment minus TENURE_* plus env, and fails t when it cannot run or
// takes longer than a minute.
func runTenure(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(cleanEnv(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return result{0, out.String(), errOut.String()}
	case errors.As(err, &ee) && ctx.Err() == nil:
		return result{ee.ExitCode(), out.String(), errOut.String()}
	}
	t.Fatalf("tenure %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut.String())
	return result{}
}

// mustRunTenure is runTenure that fails t unless the command exits 0.
func mustRunTenure(t *testing.T, env []string, args ...string) result {
	t.Helper()
	r := runTenure(t, env, args...)
	if r.code != 0 {
		t.Fatalf("tenure %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// testPKI is a CA made with `tenure tls ca create` in a directory of its
// own, and the certificates it signed with `tenure tls cert create`.
type testPKI struct {
	dir string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir()}
	mustRunTenure(t, nil, "tls", "ca", "create", "-dir", p.dir, "-days", "2")
	return p
}

func (p *testPKI) caFile() string { return filepath.Join(p.dir, "tenure-ca.pem") }

// server makes the server certificate of id and returns its files.
func (p *testPKI) server(t *testing.T, id string) (certFile, keyFile string) {
	t.Helper()
	mustRunTenure(t, nil, "tls", "cert", "create", "-server", "-node-id", id, "-dir", p.dir, "-days", "2")
	return filepath.Join(p.dir, "tenure-server-"+id+".pem"), filepath.Join(p.dir, "tenure-server-"+id+"-key.pem")
}

// client makes the client certificate called name and returns its files.
func (p *testPKI) client(t *testing.T, name string) (certFile, keyFile string) {
	t.Helper()
	mustRunTenure(t, nil, "tls", "cert", "create", "-client", "-name", name, "-dir", p.dir, "-days", "2")
	return filepath.Join(p.dir, "tenure-client-"+name+".pem"), filepath.Join(p.dir, "tenure-client-"+name+"-key.pem")
}

// httpClient returns a client that trusts the CA of trust and presents the
// certificate in certFile and keyFile, if they are not empty.
func httpClient(t *testing.T, trust *testPKI, certFile, keyFile string) *http.Client {
	t.Helper()
	b, err := os.ReadFile(trust.caFile())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatalf("no certificate in %s", trust.caFile())
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	tr := &http.Transport{TLSClientConfig: cfg}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// startTLSCluster starts n servers whose HTTP API serves TLS only, each
// with a server certificate of p's CA, and with -tls-verify-incoming when
// verifyIncoming is set. The harness talks to them over https with a
// client certificate of its own.
func startTLSCluster(t *testing.T, n int, p *testPKI, verifyIncoming bool) *cluster {
	t.Helper()
	c := newCluster(t)
	c.scheme = "https"
	c.http = httpClient(t, p, "", "")
	if verifyIncoming {
		certFile, keyFile := p.client(t, "harness")
		c.http = httpClient(t, p, certFile, keyFile)
	}
	c.nodeArgs = p.tlsArgs(verifyIncoming)
	return c.boot(t, n)
}

// serverArgs returns the nodeArgs of servers with this CA's certificates
// (made once per node id, so that a retry with new ports reuses them),
// mutual TLS, and extra flags (such as -acl-enabled).
func (p *testPKI) serverArgs(extra ...string) func(*testing.T, *node) []string {
	return p.tlsArgs(true, extra...)
}

// serverOnlyArgs is serverArgs without -tls-verify-incoming: the API and
// Raft still serve TLS only, but the API takes any client that trusts the
// CA, with or without a certificate of its own (a browser has none).
func (p *testPKI) serverOnlyArgs(extra ...string) func(*testing.T, *node) []string {
	return p.tlsArgs(false, extra...)
}

// tlsArgs returns the nodeArgs of servers with this CA's certificates,
// with -tls-verify-incoming when verifyIncoming is set, and extra flags.
func (p *testPKI) tlsArgs(verifyIncoming bool, extra ...string) func(*testing.T, *node) []string {
	return func(t *testing.T, nd *node) []string {
		t.Helper()
		cert := filepath.Join(p.dir, "tenure-server-"+nd.id+".pem")
		key := filepath.Join(p.dir, "tenure-server-"+nd.id+"-key.pem")
		if !fileExists(cert) {
			cert, key = p.server(t, nd.id)
		}
		args := []string{"-tls-cert-file", cert, "-tls-key-file", key, "-tls-ca-file", p.caFile()}
		if verifyIncoming {
			args = append(args, "-tls-verify-incoming")
		}
		return append(args, extra...)
	}
}

// tlsClient is a Go client for the nodes at addrs over https.
func tlsClient(t *testing.T, holder string, tc client.TLSConfig, addrs ...string) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Addresses = addrs
	cfg.Holder = holder
	cfg.Timeout = 5 * time.Second
	cfg.RetryMax = 2
	cfg.TLS = tc
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	return cl
}

// tokenClient is a Go client for the nodes at addrs over https that sends
// token, with the given request timeout (0 keeps the default).
func tokenClient(t *testing.T, holder, token string, tc client.TLSConfig, timeout time.Duration, addrs ...string) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Addresses, cfg.Holder, cfg.Token, cfg.TLS = addrs, holder, token, tc
	if timeout != 0 {
		cfg.Timeout = timeout
	}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// bootstrapTLS bootstraps the ACL system of c through an https client
// with tc called holder, makes the management token the one the harness
// sends, and waits for a leader. It returns the token and the leader.
func (c *cluster) bootstrapTLS(t *testing.T, holder string, tc client.TLSConfig) (*client.ACLToken, int) {
	t.Helper()
	boot := bootstrapACL(t, tlsClient(t, holder, tc, c.httpAddrs()...), startTimeout)
	c.token = boot.SecretID
	return boot, c.leader(t)
}

// tlsEnv is the environment that points the CLI at addrs over https with
// tc's CA and client certificate, sending token when it is not empty.
func tlsEnv(tc client.TLSConfig, token string, addrs ...string) []string {
	env := []string{client.EnvHTTPAddr + "=" + strings.Join(addrs, ","),
		client.EnvCACert + "=" + tc.CAFile, client.EnvClientCert + "=" + tc.CertFile, client.EnvClientKey + "=" + tc.KeyFile}
	if token != "" {
		env = append(env, client.EnvHTTPToken+"="+token)
	}
	return env
}

// startSecureCluster starts n servers with mutual TLS and ACLs on, plus
// the extra server flags. The harness's HTTP client presents the client
// certificate called name; tc holds the same certificate for Go clients.
func startSecureCluster(t *testing.T, n int, name string, extra ...string) (c *cluster, tc client.TLSConfig) {
	t.Helper()
	c, p, tc := newMutualTLSCluster(t, name)
	c.nodeArgs = p.serverArgs(append(extra, "-acl-enabled")...)
	c.start(t, n)
	return c, tc
}

// newMutualTLSCluster returns a cluster, not started, that the harness
// talks to over https with the client certificate called name of a new
// CA, p; tc holds the same certificate for Go clients. The caller sets
// the servers' nodeArgs (p.serverArgs and its own flags).
func newMutualTLSCluster(t *testing.T, name string) (c *cluster, p *testPKI, tc client.TLSConfig) {
	t.Helper()
	p = newTestPKI(t)
	certFile, keyFile := p.client(t, name)
	c = newCluster(t)
	c.scheme = "https"
	c.http = httpClient(t, p, certFile, keyFile)
	return c, p, client.TLSConfig{CAFile: p.caFile(), CertFile: certFile, KeyFile: keyFile}
}

// TestTLSMutualCluster: three servers with -tls-verify-incoming. Plain
// HTTP, https without a client certificate, and a client certificate of
// another CA are refused; a client with the CA and a client certificate
// acquires and renews through a follower, which forwards to the leader
// over TLS; the CLI works with -ca-file, -client-cert, -client-key or
// their environment variables.
func TestTLSMutualCluster(t *testing.T) {
	p := newTestPKI(t)
	c := startTLSCluster(t, 3, p, true)
	leader := c.leader(t)
	follower := c.followers(leader)[0]
	fAddr := c.nodes[follower].httpAddr
	certFile, keyFile := p.client(t, "app")

	t.Run("refused", func(t *testing.T) {
		stranger := newTestPKI(t)
		sCert, sKey := stranger.client(t, "app")
		tests := []struct {
			name   string
			client *http.Client
			url    string
		}{
			{name: "plain HTTP", client: &http.Client{Timeout: 10 * time.Second}, url: "http://" + fAddr + "/v1/status"},
			{name: "no client certificate", client: httpClient(t, p, "", ""), url: "https://" + fAddr + "/v1/status"},
			{name: "client certificate of another CA", client: httpClient(t, p, sCert, sKey), url: "https://" + fAddr + "/v1/status"},
			{name: "server of another CA", client: httpClient(t, stranger, sCert, sKey), url: "https://" + fAddr + "/v1/status"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				resp, err := tt.client.Get(tt.url)
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode < 400 {
						t.Fatalf("GET %s: %s, want it refused", tt.url, resp.Status)
					}
				}
			})
		}
	})

	t.Run("forwarding over TLS", func(t *testing.T) {
		// Raw requests to the follower: it cannot answer writes itself, so a
		// 201 and a 200 prove that it forwarded them to the leader over TLS.
		hc := httpClient(t, p, certFile, keyFile)
		fc := &cluster{http: hc, scheme: "https"}
		r, err := fc.try(fAddr, http.MethodPut, "/v1/leases/tls/raw", `{"holder":"raw","ttl":"10s"}`)
		if err != nil || r.Status != http.StatusCreated {
			t.Fatalf("acquire through follower %s: %v %v, want 201", c.nodes[follower].id, r, err)
		}
		var l lease
		r.decode(t, &l)
		r, err = fc.try(fAddr, http.MethodPost, "/v1/renew/tls/raw", fmt.Sprintf(`{"holder":"raw","token":%d}`, l.Token))
		if err != nil || r.Status != http.StatusOK {
			t.Fatalf("renew through follower %s: %v %v, want 200", c.nodes[follower].id, r, err)
		}
	})

	t.Run("Go client acquires and renews", func(t *testing.T) {
		cl := tlsClient(t, "app-1", client.TLSConfig{CAFile: p.caFile(), CertFile: certFile, KeyFile: keyFile}, "https://"+fAddr)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		got, meta, err := cl.Leases().Acquire(ctx, "tls/go", client.AcquireRequest{Holder: "app-1", TTL: 5 * time.Second})
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if meta.Address != "https://"+fAddr {
			t.Errorf("acquire answered by %s, want the follower https://%s", meta.Address, fAddr)
		}
		for i := 0; i < 3; i++ {
			renewed, meta, err := cl.Leases().Renew(ctx, "tls/go", "app-1", got.Token)
			if err != nil {
				t.Fatalf("Renew %d: %v", i, err)
			}
			if renewed.Token != got.Token || !strings.HasPrefix(meta.Address, "https://") {
				t.Fatalf("Renew %d: token %d from %s, want %d over https", i, renewed.Token, meta.Address, got.Token)
			}
		}
	})

	t.Run("CLI", func(t *testing.T) {
		flags := []string{"-http-addr", "https://" + fAddr, "-ca-file", p.caFile(), "-client-cert", certFile, "-client-key", keyFile}
		st := mustRunTenure(t, nil, append([]string{"status"}, flags...)...)
		if !strings.Contains(st.stdout, c.nodes[leader].id) {
			t.Errorf("tenure status: %q does not name the leader %s", st.stdout, c.nodes[leader].id)
		}
		mustRunTenure(t, nil, append([]string{"leases", "acquire", "tls/cli", "-holder", "cli", "-ttl", "30s"}, flags...)...)
		env := []string{
			client.EnvHTTPAddr + "=" + strings.Join(c.httpAddrs(), ","), // host:port: https, since TLS is set
			client.EnvCACert + "=" + p.caFile(),
			client.EnvClientCert + "=" + certFile,
			client.EnvClientKey + "=" + keyFile,
		}
		get := mustRunTenure(t, env, "leases", "get", "tls/cli", "-json")
		if !strings.Contains(get.stdout, `"holder": "cli"`) {
			t.Errorf("tenure leases get with TENURE_* variables: %q, want the lease held by cli", get.stdout)
		}
		// Each mistake fails at once, naming the flag that fixes it.
		for _, tt := range []struct {
			name string
			args []string
			want string
		}{
			{"without a client certificate", []string{"-http-addr", "https://" + fAddr, "-ca-file", p.caFile()}, "-client-cert and -client-key"},
			{"without the CA", []string{"-http-addr", "https://" + fAddr, "-client-cert", certFile, "-client-key", keyFile}, "-ca-file or TENURE_CACERT"},
			{"over plain HTTP", []string{"-http-addr", "http://" + fAddr}, "speaks TLS"},
		} {
			r := runTenure(t, nil, append([]string{"status"}, tt.args...)...)
			if r.code == 0 || !strings.Contains(r.stderr, tt.want) || strings.Contains(r.stderr, "giving up after") {
				t.Errorf("tenure status %s: exit %d, stderr %q; want refused at once, naming %q", tt.name, r.code, r.stderr, tt.want)
			}
		}
	})
}

// TestTLSServerOnlyCluster: without -tls-verify-incoming the API serves
// TLS only, and any client that trusts the CA may use it; plain HTTP is
// refused.
func TestTLSServerOnlyCluster(t *testing.T) {
	p := newTestPKI(t)
	c := startTLSCluster(t, 3, p, false)
	leader := c.leader(t)
	fAddr := c.nodes[c.followers(leader)[0]].httpAddr

	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + fAddr + "/v1/status")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Fatalf("plain HTTP: %s, want it refused", resp.Status)
		}
	}
	cl := tlsClient(t, "app-2", client.TLSConfig{CAFile: p.caFile()}, fAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, _, err := cl.Leases().Acquire(ctx, "tls/server-only", client.AcquireRequest{Holder: "app-2", TTL: 5 * time.Second})
	if err != nil {
		t.Fatalf("Acquire with the CA only: %v", err)
	}
	if _, _, err := cl.Leases().Renew(ctx, "tls/server-only", "app-2", got.Token); err != nil {
		t.Fatalf("Renew: %v", err)
	}
}

// TestTLSServerRefusesHalfSettings: a server started with a certificate
// but no key, or -tls-verify-incoming without a CA, exits at once and
// names the flag.
func TestTLSServerRefusesHalfSettings(t *testing.T) {
	p := newTestPKI(t)
	certFile, keyFile := p.server(t, "n1")
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "certificate without key", args: []string{"-tls-cert-file", certFile}, wantErr: "-tls-cert-file needs -tls-key-file"},
		{name: "verify incoming without CA", args: []string{"-tls-cert-file", certFile, "-tls-key-file", keyFile, "-tls-verify-incoming"}, wantErr: "-tls-verify-incoming needs -tls-ca-file"},
		{name: "certificate without CA", args: []string{"-tls-cert-file", certFile, "-tls-key-file", keyFile}, wantErr: "-tls-cert-file needs -tls-ca-file"},
		{name: "unreadable key", args: []string{"-tls-cert-file", certFile, "-tls-key-file", filepath.Join(p.dir, "missing.pem"), "-tls-ca-file", p.caFile()}, wantErr: "missing.pem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"server", "-data-dir", t.TempDir(), "-http-addr", "127.0.0.1:0", "-raft-addr", "127.0.0.1:0", "-gossip-addr", ""}, tt.args...)
			r := runTenure(t, nil, args...)
			if r.code == 0 || !strings.Contains(r.stderr, tt.wantErr) {
				t.Fatalf("exit %d, stderr %q; want a failure naming %q", r.code, r.stderr, tt.wantErr)
			}
		})
	}
}
