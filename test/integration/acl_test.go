package integration

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/client/worker"
	"github.com/tenure-io/tenure/test/harness"
)

// tenureCLI runs the tenure binary once with args, TENURE_HTTP_ADDR naming
// every node, TENURE_HTTP_TOKEN set to token and the TLS files of
// c.clientTLS, and returns its output and exit code.
func (c *cluster) tenureCLI(t *testing.T, token string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(cleanEnv(), client.EnvHTTPAddr+"="+strings.Join(c.urls(c.httpAddrs()), ","), client.EnvHTTPToken+"="+token)
	if tc := c.clientTLS; tc != nil {
		cmd.Env = append(cmd.Env, client.EnvCACert+"="+tc.CAFile, client.EnvClientCert+"="+tc.CertFile, client.EnvClientKey+"="+tc.KeyFile)
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("tenure %s: %v", strings.Join(args, " "), err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// TestACLWithProcesses: three servers started with -acl-enabled (default
// deny), and so with mutual TLS on Raft and the API. The CLI bootstraps, creates a policy and a token bound to the
// holder prefix "app-"; with that token the Go client's kept-alive lease,
// an Election and a Worker do their jobs, while requests without a token,
// and a token's use outside its binding or its rules, are refused.
func TestACLWithProcesses(t *testing.T) {
	c, p, tc := newMutualTLSCluster(t, "harness")
	c.clientTLS = &tc
	c.nodeArgs = p.serverArgs("-acl-enabled")
	c.start(t, 3)

	// Bootstrap through the CLI, once a leader serves it.
	var boot client.ACLToken
	poll.WaitFor(t, startTimeout, func() error {
		out, code := c.tenureCLI(t, "", "acl", "bootstrap", "-json")
		if code != 0 {
			return errors.New(out)
		}
		return json.Unmarshal([]byte(out), &boot)
	})
	if boot.SecretID == "" || !boot.Management {
		t.Fatalf("bootstrap printed %+v, want a management token with its secret", boot)
	}
	if out, code := c.tenureCLI(t, "", "acl", "bootstrap"); code == 0 || !strings.Contains(out, wire.CodeACLBootstrapped) {
		t.Fatalf("second bootstrap: exit %d, %s; want refused with %s", code, out, wire.CodeACLBootstrapped)
	}
	c.token = boot.SecretID // the harness's own status polls
	c.leader(t)

	// A request without a token is refused, naming the missing token.
	r, err := harness.Send(c.http, "GET", c.scheme+"://"+c.nodes[0].httpAddr+"/v1/leases/scenes/1", "", nil)
	if err != nil || r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), wire.CodePermissionDenied) ||
		!strings.Contains(string(r.Body), "no token") {
		t.Fatalf("read without a token: %v %d %s; want 403 %s, no token", err, r.Status, r.Body, wire.CodePermissionDenied)
	}
	anon := c.newClient(t, "app-anon")
	if _, _, err := anon.Leases().Get(context.Background(), "scenes/1", nil); !errors.Is(err, client.ErrPermissionDenied) {
		t.Fatalf("Go client without a token: %v, want ErrPermissionDenied", err)
	}
	if out, code := c.tenureCLI(t, "", "leases", "list"); code == 0 || !strings.Contains(out, "permission_denied") {
		t.Fatalf("CLI without a token: exit %d, %s", code, out)
	}

	// A policy and a bound token, through the CLI.
	out, code := c.tenureCLI(t, boot.SecretID, "acl", "policy", "create", "-name", "app",
		"-rule", "prefix=scenes/:read,write", "-rule", "prefix=elections/:read,write",
		"-rule", "prefix=parts:read", "-rule", "prefix=parts/:read,write")
	if code != 0 {
		t.Fatalf("policy create: %s", out)
	}
	out, code = c.tenureCLI(t, boot.SecretID, "acl", "token", "create", "-policy", "app", "-holder-prefix", "app-",
		"-description", "the app's processes", "-json")
	var app client.ACLToken
	if code != 0 || json.Unmarshal([]byte(out), &app) != nil || app.SecretID == "" {
		t.Fatalf("token create: exit %d, %s", code, out)
	}
	out, code = c.tenureCLI(t, boot.SecretID, "acl", "token", "list")
	if code != 0 || !strings.Contains(out, app.AccessorID) || strings.Contains(out, app.SecretID) {
		t.Fatalf("token list: exit %d, %s; want the accessor and never the secret", code, out)
	}
	if out, code := c.tenureCLI(t, boot.SecretID, "groups", "create", "parts", "-prefix", "parts/", "-count", "4"); code != 0 {
		t.Fatalf("groups create: %s", out)
	}

	newAppClient := func(holder string) *client.Client {
		cfg := client.DefaultConfig()
		cfg.Addresses, cfg.Holder, cfg.Token, cfg.Timeout, cfg.TLS = c.urls(c.httpAddrs()), holder, app.SecretID, 5*time.Second, *c.clientTLS
		cl, err := client.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Keep-alive: acquire, survive several renewals, release.
	cl := newAppClient("app-tracker-1")
	lease, err := cl.Acquire(ctx, "scenes/1", client.WithTTL(2*time.Second))
	if err != nil {
		t.Fatalf("Acquire with the token: %v", err)
	}
	select {
	case <-lease.Context().Done():
		t.Fatalf("lease lost while kept alive: %v", lease.Err())
	case <-time.After(3 * time.Second): // a TTL and a half: renewals went through
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	// Outside the token's rules, and outside its holder binding.
	if _, err := cl.Acquire(ctx, "jobs/1", client.WithTTL(2*time.Second)); !errors.Is(err, client.ErrPermissionDenied) {
		t.Fatalf("Acquire outside the rules: %v, want ErrPermissionDenied", err)
	}
	if _, err := newAppClient("other-1").Acquire(ctx, "scenes/2", client.WithTTL(2*time.Second)); !errors.Is(err, client.ErrPermissionDenied) {
		t.Fatalf("Acquire outside the holder binding: %v, want ErrPermissionDenied", err)
	}

	// An election.
	mustLead(t, ctx, newAppClient("app-sched-1"), "scheduler")

	// A worker: it registers with the token and is given every key.
	w := runWorker(t, ctx, newAppClient("app-w1"), "parts",
		worker.WithWorkerID("app-w1"), worker.WithWorkerTTL(2*time.Second), worker.WithJoin(c.nodes[0].gossipAddr))
	poll.WaitFor(t, 30*time.Second, func() error { return w.owns(4) })
	// A worker whose id the token's binding does not admit cannot join.
	bad := worker.New(newAppClient("app-x"), "parts", func(ctx context.Context, key string, token uint64) { <-ctx.Done() },
		worker.WithWorkerID("intruder"), worker.WithJoin(c.nodes[0].gossipAddr))
	if err := bad.Run(ctx); !errors.Is(err, client.ErrPermissionDenied) {
		t.Errorf("worker outside the binding: Run = %v, want ErrPermissionDenied", err)
	}
	w.stop()
	<-w.done

	// Deleting the token stops it at once.
	if out, code := c.tenureCLI(t, boot.SecretID, "acl", "token", "delete", app.AccessorID); code != 0 {
		t.Fatalf("token delete: %s", out)
	}
	if _, _, err := cl.Leases().Get(ctx, "scenes/1", nil); !errors.Is(err, client.ErrACLNotFound) {
		t.Errorf("read with the deleted token: %v, want ErrACLNotFound", err)
	}
}

// policyToken sets the policy called name to rules through admin and
// returns a new token of that policy alone, bound to the holders that
// start with holderPrefix (to any holder when it is empty).
func policyToken(t *testing.T, ctx context.Context, admin *client.Client, name, holderPrefix string, rules []client.ACLRule) *client.ACLToken {
	t.Helper()
	if _, err := admin.ACL().SetPolicy(ctx, name, client.ACLPolicySpec{Rules: rules}); err != nil {
		t.Fatal(err)
	}
	tok, err := admin.ACL().CreateToken(ctx, client.ACLTokenSpec{Policies: []string{name}, HolderPrefix: holderPrefix})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// mustLead runs an Election of name (TTL 2s) through cl until it leads,
// within 20 seconds, with its leadership in the context of
// OnStartedLeading; then it stops the election and waits for Run to end.
func mustLead(t *testing.T, ctx context.Context, cl *client.Client, name string) {
	t.Helper()
	led := make(chan uint64, 1)
	ectx, stopElection := context.WithCancel(ctx)
	electionDone := make(chan error, 1)
	go func() {
		electionDone <- cl.Election(name, client.WithTTL(2*time.Second)).Run(ectx, client.RunConfig{
			OnStartedLeading: func(ctx context.Context) {
				led <- client.LeadershipFromContext(ctx).Token()
				<-ctx.Done()
			},
		})
	}()
	select {
	case <-led:
	case err := <-electionDone:
		t.Fatalf("election ended before leading: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatalf("the election of %s never led", name)
	}
	stopElection()
	<-electionDone
}
