package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// The token goes with every request: from Config.Token, and by default
// from TENURE_HTTP_TOKEN, never from TENURE_TOKEN (the fencing token that
// tenure lock hands to its command).
func TestTokenSentWithEveryRequest(t *testing.T) {
	t.Setenv(EnvHTTPToken, "from-env")
	t.Setenv("TENURE_TOKEN", "17")
	if got := DefaultConfig().Token; got != "from-env" {
		t.Fatalf("DefaultConfig().Token = %q, want the value of %s", got, EnvHTTPToken)
	}
	// seen: the tokens of the calls; opened: those of the attempts to
	// open a request stream (this server refuses them: the calls then go
	// as requests of their own).
	// The streams open in the background, in any order.
	var seen []string
	opened := make(chan string, 4)
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.URL.Path == wire.StreamPath {
			opened <- r.Header.Get(HeaderToken)
			http.NotFound(w, r)
			return
		}
		seen = append(seen, r.Header.Get(HeaderToken)) // one call at a time
		writeJSON(w, 200, testLease("k"))
	})
	c, _ := newTestClient(t, srv.URL)
	ctx := context.Background()
	if _, _, err := c.Leases().Get(ctx, "k", nil); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Addresses, cfg.Token = []string{srv.URL}, "explicit"
	c2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c2.Leases().Get(ctx, "k", nil); err != nil {
		t.Fatal(err)
	}
	cfg.Token = ""
	c3, _ := New(cfg)
	if _, _, err := c3.Leases().Get(ctx, "k", nil); err != nil {
		t.Fatal(err)
	}
	if want := []string{"from-env", "explicit", ""}; len(seen) != 3 || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
		t.Errorf("%s headers sent: %q, want %q", HeaderToken, seen, want)
	}
	got := map[string]bool{}
	for range 2 {
		select {
		case tok := <-opened:
			got[tok] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("stream openings with %s headers %v, want \"explicit\" and \"\"", HeaderToken, got)
		}
	}
	if !got["explicit"] || !got[""] {
		t.Errorf("%s headers of the stream openings: %v, want \"explicit\" and \"\"", HeaderToken, got)
	}
}

func TestACLCalls(t *testing.T) {
	var srv *fakeServer
	srv = newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch r.Method + " " + r.URL.Path {
		case "POST /v1/acl/bootstrap":
			if n > 1 {
				writeError(w, 403, wire.CodeACLBootstrapped, "already")
				return
			}
			writeJSON(w, 200, map[string]any{"accessor_id": "acc", "secret_id": "sec", "management": true, "policies": []string{}})
		case "PUT /v1/acl/token":
			writeJSON(w, 200, map[string]any{"accessor_id": "acc2", "secret_id": "sec2", "policies": []string{"p"}, "holder_prefix": "w-"})
		case "GET /v1/acl/tokens":
			writeJSON(w, 200, map[string]any{"tokens": []map[string]any{{"accessor_id": "acc"}}, "index": 3})
		case "PUT /v1/acl/policy/p":
			writeJSON(w, 200, map[string]any{"name": "p", "rules": []map[string]any{{"prefix": "a/", "rights": []string{"read"}}}})
		case "DELETE /v1/acl/token/gone":
			writeError(w, 404, wire.CodeNotFound, "no token")
		case "GET /v1/acl/token/self":
			writeError(w, 403, wire.CodePermissionDenied, `permission denied: no token (anonymous requests are denied) lacks "acl"`)
		case "POST /v1/acl/authorize":
			// Read is allowed, the rest denied; the checks come back in order.
			var body wire.ACLAuthorizeBody
			if err := json.Unmarshal([]byte(srv.requests()[n-1].Body), &body); err != nil {
				writeError(w, 400, wire.CodeInvalidBody, err.Error())
				return
			}
			out := wire.ACLAuthorizeResults{Checks: []ACLCheckResult{}}
			for _, c := range body.Checks {
				out.Checks = append(out.Checks, ACLCheckResult{ACLCheck: c, Allowed: c.Right == RightRead})
			}
			writeJSON(w, 200, out)
		}
	})
	c, _ := newTestClient(t, srv.URL)
	ctx := context.Background()
	boot, err := c.ACL().Bootstrap(ctx)
	if err != nil || boot.SecretID != "sec" || !boot.Management {
		t.Fatalf("Bootstrap = %+v, %v", boot, err)
	}
	if _, err := c.ACL().Bootstrap(ctx); !errors.Is(err, ErrACLBootstrapped) {
		t.Errorf("second Bootstrap: %v, want ErrACLBootstrapped", err)
	}
	tok, err := c.ACL().CreateToken(ctx, ACLTokenSpec{Policies: []string{"p"}, HolderPrefix: "w-"})
	if err != nil || tok.SecretID != "sec2" || tok.HolderPrefix != "w-" {
		t.Errorf("CreateToken = %+v, %v", tok, err)
	}
	if tokens, err := c.ACL().ListTokens(ctx); err != nil || len(tokens) != 1 {
		t.Errorf("ListTokens = %+v, %v", tokens, err)
	}
	p, err := c.ACL().SetPolicy(ctx, "p", ACLPolicySpec{Rules: []ACLRule{{Prefix: "a/", Rights: []string{RightRead}}}})
	if err != nil || len(p.Rules) != 1 {
		t.Errorf("SetPolicy = %+v, %v", p, err)
	}
	if err := c.ACL().DeleteToken(ctx, "gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteToken(gone) = %v, want ErrNotFound", err)
	}
	if _, err := c.ACL().Self(ctx); !errors.Is(err, ErrPermissionDenied) {
		t.Errorf("Self without a token = %v, want ErrPermissionDenied", err)
	}
	checks := []ACLCheck{CheckKey(RightRevoke, "scenes/01"), CheckKey(RightRead, "scenes/01"), CheckPrefix(RightRead, ""),
		CheckGroup(RightGroups, "g"), CheckWorker(RightGroups, "w1"), CheckCluster(RightOperator)}
	res, err := c.ACL().Authorize(ctx, checks)
	if err != nil || len(res) != len(checks) {
		t.Fatalf("Authorize = %+v, %v; want %d results", res, err, len(checks))
	}
	for i, r := range res {
		if r.Right != checks[i].Right || r.Allowed != (r.Right == RightRead) {
			t.Errorf("Authorize result %d = %+v, want the check %+v, allowed only for read", i, r, checks[i])
		}
	}
	if res[2].Prefix == nil || *res[2].Prefix != "" {
		t.Errorf("Authorize result 2 = %+v, want the empty prefix kept (every name)", res[2])
	}
	for _, n := range []int{0, MaxACLChecks + 1} {
		if _, err := c.ACL().Authorize(ctx, make([]ACLCheck, n)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Authorize with %d checks = %v, want ErrInvalid", n, err)
		}
	}
}
