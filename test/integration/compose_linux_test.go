package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/test/harness"
)

// composeCLI is the Compose command of this machine: the plugin `docker
// compose` (Compose v2) when docker has it, else the standalone
// `docker-compose` (v1, or v2 installed as a binary). works reports
// whether a command runs (exits 0); it is exec in the tests, a table in
// TestComposeCLI.
func composeCLI(works func(argv ...string) bool) ([]string, error) {
	switch {
	case works("docker", "compose", "version"):
		return []string{"docker", "compose"}, nil
	case works("docker-compose", "version"):
		return []string{"docker-compose"}, nil
	}
	return nil, fmt.Errorf("neither `docker compose` nor `docker-compose` is installed")
}

// commandWorks runs argv and reports whether it exited 0.
func commandWorks(argv ...string) bool {
	return exec.Command(argv[0], argv[1:]...).Run() == nil
}

// needDocker returns the Compose command to use, after checking that a
// Docker daemon answers; without both it skips t, or fails it under
// CI=true, where they must be there.
func needDocker(t *testing.T) []string {
	t.Helper()
	compose, err := composeCLI(commandWorks)
	why := ""
	if err != nil {
		why = err.Error()
	} else if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		why = fmt.Sprintf("no Docker daemon (docker info: %v: %s)", err, strings.TrimSpace(string(out)))
	}
	if why == "" {
		return compose
	}
	harness.Missing(t, why)
	return nil
}

// dockerImage builds the FROM scratch image of deploy/Dockerfile with a
// static binary, as `make docker` does, under tag; the test's end removes
// it.
func dockerImage(t *testing.T, tag string) {
	t.Helper()
	ctxDir := t.TempDir()
	root := filepath.Join("..", "..")
	build := exec.Command("go", "build", "-o", filepath.Join(ctxDir, "bin", "tenure"), "./cmd/tenure")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("static build: %v\n%s", err, out)
	}
	if out, err := exec.Command("cp", "-r", filepath.Join(root, "deploy"), filepath.Join(ctxDir, "deploy")).CombinedOutput(); err != nil {
		t.Fatalf("copy deploy/: %v\n%s", err, out)
	}
	os.RemoveAll(filepath.Join(ctxDir, "deploy", "check")) // not needed in the image's context
	if out, err := exec.Command("docker", "build", "-q", "-f", filepath.Join(ctxDir, "deploy", "Dockerfile"), "-t", tag, ctxDir).CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", tag).Run() })
}

// composeRun is one project brought up from a compose file of deploy/.
type composeRun struct {
	t       *testing.T
	compose []string // the Compose command (composeCLI)
	file    string
	project string
	env     []string
	addrs   []string // the published HTTP addresses of n1, n2, n3
}

// upCompose builds the image and brings file up with compose (needDocker)
// under a project of its own, with the published ports on free loopback ports and env added; the
// test's end runs down -v.
func upCompose(t *testing.T, compose []string, file string, env ...string) *composeRun {
	t.Helper()
	project := fmt.Sprintf("tenuretest%d%s", os.Getpid(), strings.NewReplacer(".", "", "-", "").Replace(strings.TrimSuffix(file, ".yml")))
	tag := "tenure:" + project
	dockerImage(t, tag)
	ports, err := harness.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	r := &composeRun{t: t, compose: compose, file: filepath.Join("..", "..", "deploy", file), project: project, env: append(env, "TENURE_IMAGE="+tag)}
	for i, p := range ports {
		r.env = append(r.env, fmt.Sprintf("TENURE_N%d_PORT=%d", i+1, p))
		r.addrs = append(r.addrs, fmt.Sprintf("127.0.0.1:%d", p))
	}
	t.Cleanup(func() {
		if out, err := r.cmd("down", "-v", "--remove-orphans").CombinedOutput(); err != nil {
			t.Errorf("%s down -v: %v\n%s", strings.Join(r.compose, " "), err, out)
		}
	})
	r.run("up", "-d")
	return r
}

func (r *composeRun) cmd(args ...string) *exec.Cmd {
	argv := append(append(slices.Clone(r.compose[1:]), "-p", r.project, "-f", r.file), args...)
	cmd := exec.Command(r.compose[0], argv...)
	cmd.Env = append(os.Environ(), r.env...)
	return cmd
}

// run runs the Compose command with args and fails the test if it fails.
func (r *composeRun) run(args ...string) {
	r.t.Helper()
	if out, err := r.cmd(args...).CombinedOutput(); err != nil {
		r.t.Fatalf("%s %s: %v\n%s", strings.Join(r.compose, " "), strings.Join(args, " "), err, out)
	}
}

// exercise acquires and renews a lease from the host through c, stops the
// leader's container (SIGTERM: it hands over), checks that the lease and
// its token survive and a new leader serves, starts it again and checks,
// through get (a stale read of the lease on one server), that it has the
// lease back.
func (r *composeRun) exercise(c *client.Client, get func(addr string) (*client.LeaseInfo, error)) {
	t := r.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var lease *client.LeaseInfo
	poll.WaitFor(t, time.Minute, func() error { // the three bootstrap together
		var err error
		lease, _, err = c.Leases().Acquire(ctx, "compose-k", client.AcquireRequest{Holder: c.Holder(), TTL: 20 * time.Second})
		return err
	})
	if _, _, err := c.Leases().Renew(ctx, "compose-k", c.Holder(), lease.Token); err != nil {
		t.Fatalf("renew: %v", err)
	}
	st, _, err := c.Status(ctx)
	if err != nil || st.LeaderID == "" {
		t.Fatalf("status: %+v, %v", st, err)
	}
	leader := st.LeaderID // n1, n2 or n3: the compose service names

	r.run("stop", leader)
	var now *client.NodeStatus
	poll.WaitFor(t, 30*time.Second, func() error {
		s, _, err := c.Status(ctx)
		if err == nil && (s.LeaderID == "" || s.LeaderID == leader) {
			err = fmt.Errorf("leader %q", s.LeaderID)
		}
		now = s
		return err
	})
	got, _, err := c.Leases().Get(ctx, "compose-k", nil)
	if err != nil || got.State != client.StateHeld || got.Token != lease.Token {
		t.Errorf("lease after stopping leader %s: %+v, %v; want held with token %d", leader, got, err, lease.Token)
	}
	if _, _, err := c.Leases().Renew(ctx, "compose-k", c.Holder(), lease.Token); err != nil {
		t.Errorf("renew on the new leader %s: %v", now.LeaderID, err)
	}
	t.Logf("stopped %s; %s leads", leader, now.LeaderID)

	r.run("start", leader)
	stopped := r.addrs[int(leader[1]-'1')]
	poll.WaitFor(t, time.Minute, func() error {
		back, err := get(stopped)
		if err == nil && (back.Token != lease.Token || back.State != client.StateHeld) {
			err = fmt.Errorf("lease on the restarted %s: %+v; want held with token %d", leader, back, lease.Token)
		}
		return err
	})
}

// recreateEach recreates the containers one at a time at a new IP (same
// node id, same volume), as a rolling update of pods does, waiting after
// each until it is ready again: the Raft configuration knows it by name
// (-raft-advertise), which the others resolve on each dial;
// a lease held with a long TTL keeps its token throughout, and a leader
// serves after each.
func (r *composeRun) recreateEach(c *client.Client) {
	t := r.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	held, _, err := c.Leases().Acquire(ctx, "compose-rolling", client.AcquireRequest{Holder: c.Holder(), TTL: 5 * time.Minute})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	for i := 1; i <= 3; i++ {
		name, ip := fmt.Sprintf("n%d", i), fmt.Sprintf("172.28.0.%d", 20+i)
		r.env = append(r.env, fmt.Sprintf("TENURE_N%d_IP=%s", i, ip)) // the last value wins
		start := time.Now()
		r.run("up", "-d", "--no-deps", "--force-recreate", name)
		poll.WaitFor(t, 90*time.Second, func() error {
			st, _, err := c.Status(ctx)
			if err != nil {
				return err
			}
			var leader *client.NodeStatus
			for _, addr := range r.addrs {
				one, err := r.statusAt(ctx, addr)
				if err == nil && one.Role == "leader" {
					leader = one
				}
			}
			if leader == nil {
				return fmt.Errorf("no leader (status %+v)", st)
			}
			named := false
			for _, srv := range leader.Servers {
				if srv.ID == name && srv.RaftAddr == name+":7501" {
					named = true
				}
			}
			if !named {
				return fmt.Errorf("leader %s lists %+v, want %s under its name, %s:7501 (-raft-advertise)", leader.NodeID, leader.Servers, name, name)
			}
			resp, err := http.Get("http://" + r.addrs[i-1] + "/readyz")
			if err != nil {
				return fmt.Errorf("%s after its recreation: /readyz: %v", name, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s after its recreation: /readyz %d %s; want 200", name, resp.StatusCode, body)
			}
			return nil
		})
		got, _, err := c.Leases().Get(ctx, "compose-rolling", nil)
		if err != nil || got.State != client.StateHeld || got.Token != held.Token {
			t.Fatalf("lease after recreating %s at %s: %+v, %v; want held with token %d", name, ip, got, err, held.Token)
		}
		t.Logf("recreated %s at %s: back in the cluster after %v", name, ip, time.Since(start).Round(time.Millisecond))
	}
}

// statusAt reads the status of the server at addr alone.
func (r *composeRun) statusAt(ctx context.Context, addr string) (*client.NodeStatus, error) {
	cfg := client.DefaultConfig()
	cfg.Addresses, cfg.Timeout, cfg.RetryMax = []string{addr}, 3*time.Second, 1
	one, err := client.New(cfg)
	if err != nil {
		return nil, err
	}
	st, _, err := one.Status(ctx)
	return st, err
}

// TestDockerCompose brings deploy/docker-compose.yml up on the image
// built from this tree and exercises it from the host with the Go client
// (composeRun.exercise), recreates each container in turn at a new IP
// (composeRun.recreateEach); down -v removes it all.
func TestDockerCompose(t *testing.T) {
	r := upCompose(t, needDocker(t), "docker-compose.yml")
	cfg := client.DefaultConfig()
	cfg.Addresses, cfg.Holder = r.addrs, "compose-test"
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.exercise(c, func(addr string) (*client.LeaseInfo, error) {
		cfg := client.DefaultConfig()
		cfg.Addresses, cfg.Holder, cfg.Timeout = []string{addr}, "compose-test", 5*time.Second
		one, err := client.New(cfg)
		if err != nil {
			return nil, err
		}
		l, _, err := one.Leases().Get(context.Background(), "compose-k", &client.QueryOptions{Stale: true})
		return l, err
	})
	r.recreateEach(c)
}

// TestDockerComposeSecure does the same with deploy/docker-compose.secure.yml:
// mutual TLS, gossip encryption and ACLs, with certificates made by
// `tenure tls` and a key by `tenure keygen`, the ACLs bootstrapped from
// the host.
func TestDockerComposeSecure(t *testing.T) {
	compose := needDocker(t)
	p := newTestPKI(t)
	for _, n := range []string{"n1", "n2", "n3"} {
		mustRunTenure(t, nil, "tls", "cert", "create", "-server", "-node-id", n, "-additional-dnsname", n, "-additional-ipaddress", "127.0.0.1", "-dir", p.dir, "-days", "2")
	}
	certFile, keyFile := p.client(t, "app")
	// The servers run as uid 65532: let them read the files.
	files, _ := filepath.Glob(filepath.Join(p.dir, "*.pem"))
	for _, f := range files {
		if err := os.Chown(f, 65532, 65532); err != nil {
			t.Fatalf("chown %s: %v", f, err)
		}
	}
	key := newGossipKey(t)
	r := upCompose(t, compose, "docker-compose.secure.yml", "TENURE_TLS_DIR="+p.dir, "TENURE_GOSSIP_KEY="+key)
	var https []string
	for _, a := range r.addrs {
		https = append(https, "https://"+a)
	}
	tc := client.TLSConfig{CAFile: p.caFile(), CertFile: certFile, KeyFile: keyFile}
	boot := bootstrapACL(t, tlsClient(t, "admin", tc, https...), time.Minute)
	c := tokenClient(t, "compose-test", boot.SecretID, tc, 0, https...)
	if _, _, err := tlsClient(t, "no-token", tc, https...).Status(context.Background()); err == nil {
		t.Error("status without an ACL token succeeded")
	}
	r.exercise(c, func(addr string) (*client.LeaseInfo, error) {
		cfg := client.DefaultConfig()
		cfg.Addresses, cfg.Holder, cfg.Token, cfg.TLS, cfg.Timeout = []string{"https://" + addr}, "compose-test", boot.SecretID, tc, 5*time.Second
		one, err := client.New(cfg)
		if err != nil {
			return nil, err
		}
		l, _, err := one.Leases().Get(context.Background(), "compose-k", &client.QueryOptions{Stale: true})
		return l, err
	})
}

// TestComposeCLI checks that the Docker tests take Compose v2's plugin
// (`docker compose`) as well as the standalone `docker-compose`, the
// plugin first, and say what is missing when neither runs.
func TestComposeCLI(t *testing.T) {
	for _, tc := range []struct {
		name    string
		have    []string // the commands that run, argv joined by spaces
		want    string
		wantErr bool
	}{
		{name: "plugin only", have: []string{"docker compose version"}, want: "docker compose"},
		{name: "standalone only", have: []string{"docker-compose version"}, want: "docker-compose"},
		{name: "both: the plugin", have: []string{"docker-compose version", "docker compose version"}, want: "docker compose"},
		{name: "neither", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := composeCLI(func(argv ...string) bool {
				return slices.Contains(tc.have, strings.Join(argv, " "))
			})
			if (err != nil) != tc.wantErr {
				t.Fatalf("composeCLI: err %v, want an error: %t", err, tc.wantErr)
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("composeCLI = %q, want %q", g, tc.want)
			}
		})
	}
}
