package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/client/worker"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// aclEnv is an ACL cluster with its bootstrap (management) secret.
type aclEnv struct {
	*testCluster
	boot string
}

func startACL(t *testing.T, n int) *aclEnv {
	t.Helper()
	return bootstrapACL(t, startACLCluster(t, n))
}

// bootstrapACL makes the management token of ACL cluster c.
func bootstrapACL(t *testing.T, c *testCluster) *aclEnv {
	t.Helper()
	r := do(t, "POST", c.leader().url+"/v1/acl/bootstrap", "")
	r.wantStatus(t, "bootstrap", 200)
	var tok client.ACLToken
	r.decode(t, &tok)
	return &aclEnv{testCluster: c, boot: tok.SecretID}
}

// policy creates (or replaces) a policy.
func (e *aclEnv) policy(t *testing.T, name string, rules ...client.ACLRule) {
	t.Helper()
	body := fmt.Sprintf(`{"rules":%s}`, mustJSON(t, rules))
	doAs(t, e.boot, "PUT", e.leader().url+"/v1/acl/policy/"+name, body).wantStatus(t, "put policy "+name, 200)
}

// token creates a token and returns it with its secret.
func (e *aclEnv) token(t *testing.T, spec client.ACLTokenSpec) client.ACLToken {
	t.Helper()
	r := doAs(t, e.boot, "PUT", e.leader().url+"/v1/acl/token", mustJSON(t, spec))
	r.wantStatus(t, "create token", 200)
	var tok client.ACLToken
	r.decode(t, &tok)
	if tok.SecretID == "" || tok.AccessorID == "" || tok.SecretID == tok.AccessorID {
		t.Fatalf("created token %+v: want a secret distinct from its accessor", tok)
	}
	return tok
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func rule(prefix string, rights ...string) client.ACLRule {
	return client.ACLRule{Prefix: prefix, Rights: rights}
}

// wantDenied fails unless r is 403 with code and a message that contains
// every part of want.
func (r reply) wantDenied(t *testing.T, what, code string, want ...string) {
	t.Helper()
	r.wantStatus(t, what, http.StatusForbidden)
	e := r.apiErr(t)
	if e.Error != code {
		t.Fatalf("%s: code %q, want %q (%s)", what, e.Error, code, e.Message)
	}
	for _, w := range want {
		if !strings.Contains(e.Message, w) {
			t.Errorf("%s: message %q does not name %s", what, e.Message, w)
		}
	}
}

func TestACLBootstrapOnce(t *testing.T) {
	c := startACLCluster(t, 3)
	leader, follower := c.follower()
	// Through a follower: forwarded to the leader.
	r := do(t, "POST", follower.url+"/v1/acl/bootstrap", "")
	r.wantStatus(t, "bootstrap", 200)
	var boot client.ACLToken
	r.decode(t, &boot)
	if !boot.Management || boot.SecretID == "" || boot.AccessorID == "" {
		t.Fatalf("bootstrap answered %+v, want a management token with accessor and secret", boot)
	}
	for _, n := range c.nodes {
		do(t, "POST", n.url+"/v1/acl/bootstrap", "").wantDenied(t, "second bootstrap on "+n.id, wire.CodeACLBootstrapped)
	}
	// The secret is shown once: lists and reads never show it, nor its hash.
	r = doAs(t, boot.SecretID, "GET", leader.url+"/v1/acl/tokens", "")
	r.wantStatus(t, "list tokens", 200)
	if bytes.Contains(r.body, []byte(boot.SecretID)) || bytes.Contains(r.body, []byte(hashSecret(boot.SecretID))) {
		t.Errorf("token list shows the secret or its hash: %s", r.body)
	}
	r = doAs(t, boot.SecretID, "GET", leader.url+"/v1/acl/token/"+boot.AccessorID, "")
	r.wantStatus(t, "read token", 200)
	if bytes.Contains(r.body, []byte(boot.SecretID)) {
		t.Errorf("token read shows the secret: %s", r.body)
	}
}

// routeNeed is what one route needs, for TestACLEveryRouteRight.
type routeNeed struct {
	route        string // the router's "METHOD template"
	method, path string
	body         string
	// right is the one right the route needs; "" for a route that needs
	// only some token, "open" for one that needs none.
	right string
}

// Every route, with a token that has exactly the right it needs, is not
// refused; with a token that has every other right, no token, or an
// unknown secret, it is refused with 403 naming the right.
func TestACLEveryRouteRight(t *testing.T) {
	e := startACL(t, 1)
	url := e.leader().url
	rights := []string{client.RightRead, client.RightWrite, client.RightRevoke, client.RightGroups, client.RightOperator, client.RightACL,
		client.RightMetrics, client.RightDebug}
	only, allBut := map[string]string{}, map[string]string{}
	for _, right := range rights {
		e.policy(t, "only-"+right, rule("", right))
		// Every other right, but those that imply this one (operator
		// implies debug and metrics, debug metrics).
		var others []string
		want, _ := fsm.ParseRight(right)
		for _, o := range rights {
			if r, _ := fsm.ParseRight(o); o != right && r.Implied()&want == 0 {
				others = append(others, o)
			}
		}
		e.policy(t, "all-but-"+right, rule("", others...))
		only[right] = e.token(t, client.ACLTokenSpec{Policies: []string{"only-" + right}}).SecretID
		allBut[right] = e.token(t, client.ACLTokenSpec{Policies: []string{"all-but-" + right}}).SecretID
	}
	doAs(t, e.boot, "PUT", url+"/v1/groups/g", `{"prefix":"g-","count":2}`).wantStatus(t, "put group", 200)
	doAs(t, e.boot, "PUT", url+"/v1/leases/k/held", `{"holder":"h0","ttl":"30s"}`).wantStatus(t, "acquire", 201)

	routes := []routeNeed{
		{"PUT /v1/leases/{key:.+}", "PUT", "/v1/leases/k/a", `{"holder":"h1","ttl":"30s"}`, client.RightWrite},
		{"PUT /v1/leases/{key:.+}", "PUT", "/v1/leases/k/b", `{"holder":"h1","ttl":"30s","wait":"10ms"}`, client.RightWrite},
		{"GET /v1/leases/{key:.+}", "GET", "/v1/leases/k/a", "", client.RightRead},
		{"GET /v1/leases/{key:.+}", "GET", "/v1/leases/k/a?stale", "", client.RightRead},
		{"GET /v1/leases", "GET", "/v1/leases?prefix=k/", "", client.RightRead},
		{"GET /v1/leases", "GET", "/v1/leases", "", client.RightRead},
		{"POST /v1/renew/{key:.+}", "POST", "/v1/renew/k/a", `{"holder":"h1","token":2}`, client.RightWrite},
		{"POST /v1/renew", "POST", "/v1/renew", `{"holder":"h1","leases":[{"key":"k/a","token":2}]}`, client.RightWrite},
		{"DELETE /v1/leases/{key:.+}", "DELETE", "/v1/leases/k/a?holder=h1&token=2", "", client.RightWrite},
		{"POST /v1/revoke/{key:.+}", "POST", "/v1/revoke/k/held", "", client.RightRevoke},
		{"POST /v1/revoke", "POST", "/v1/revoke?holder=h1", "", client.RightRevoke},
		{"PUT /v1/groups/{name:.+?}", "PUT", "/v1/groups/g2", `{"keys":["x"]}`, client.RightGroups},
		{"POST /v1/groups/{name:.+?}/keys", "POST", "/v1/groups/g/keys", `{"add":["g-9"]}`, client.RightGroups},
		{"PUT /v1/groups/{name:.+?}/keys", "PUT", "/v1/groups/g/keys", `{"keys":["g-0","g-9"]}`, client.RightGroups},
		{"PUT /v1/groups/{name:.+?}/max-per-worker", "PUT", "/v1/groups/g/max-per-worker", `{"max_per_worker":2}`, client.RightGroups},
		{"PUT /v1/groups/{name:.+?}/balance", "PUT", "/v1/groups/g/balance", `{"by":"load"}`, client.RightGroups},
		{"GET /v1/groups", "GET", "/v1/groups", "", client.RightRead},
		{"GET /v1/groups/{name:.+?}", "GET", "/v1/groups/g", "", client.RightRead},
		{"GET /v1/groups/{name:.+?}/assignment", "GET", "/v1/groups/g/assignment?stale", "", client.RightRead},
		{"GET /v1/health/placement", "GET", "/v1/health/placement", "", client.RightRead},
		{"DELETE /v1/groups/{name:.+?}", "DELETE", "/v1/groups/g2", "", client.RightGroups},
		{"PUT /v1/controls/{key:.+}", "PUT", "/v1/controls/g-1", `{"disabled":true}`, client.RightGroups},
		{"PATCH /v1/controls/{key:.+}", "PATCH", "/v1/controls/g-1", `{"prohibit":["w9"]}`, client.RightGroups},
		{"GET /v1/controls/{key:.+}", "GET", "/v1/controls/g-1", "", client.RightRead},
		{"POST /v1/workers/{id}/drain", "POST", "/v1/workers/w1/drain?force=true", `{"draining":false}`, client.RightGroups},
		{"GET /v1/workers", "GET", "/v1/workers", "", client.RightRead},
		{"GET /v1/workers", "GET", "/v1/workers?stale", "", client.RightRead},
		{"POST /v1/workers/{id}/register", "POST", "/v1/workers/w1/register", `{"groups":["g"]}`, ""},
		{"POST /v1/groups/{name:.+?}/prepared", "POST", "/v1/groups/g/prepared", `{"worker":"w1","keys":["g-1"]}`, ""}, // the worker's, checked in Prepared
		{"GET /v1/events", "GET", "/v1/events?prefix=k/", "", client.RightRead},
		{"GET /v1/events", "GET", "/v1/events", "", client.RightRead},
		{"GET /v1/status", "GET", "/v1/status", "", ""},
		{"GET /v1/members", "GET", "/v1/members", "", ""},
		{"GET /v1/stream", "GET", "/v1/stream", "", ""}, // each frame is checked as its request (TestRequestStreamChecksTheTokenOfEveryFrame)
		{"POST /v1/operator/snapshot", "POST", "/v1/operator/snapshot", "", client.RightOperator},
		{"GET /v1/snapshot", "GET", "/v1/snapshot", "", client.RightOperator},
		{"PUT /v1/snapshot", "PUT", "/v1/snapshot", "not a snapshot", client.RightOperator},
		{"GET /v1/operator/keyring", "GET", "/v1/operator/keyring", "", client.RightOperator},
		{"POST /v1/operator/keyring", "POST", "/v1/operator/keyring", `{"op":"install","gossip_key":"AAAA"}`, client.RightOperator},
		{"DELETE /v1/operator/servers/{id}", "DELETE", "/v1/operator/servers/n9", "", client.RightOperator},
		{"POST /v1/operator/transfer-leader", "POST", "/v1/operator/transfer-leader", `{}`, client.RightOperator},
		{"POST /v1/operator/servers/{id}/promote", "POST", "/v1/operator/servers/n1/promote", "", client.RightOperator},
		{"POST /v1/operator/servers/{id}/readmit", "POST", "/v1/operator/servers/n1/readmit", "", client.RightOperator},
		{"GET /metrics", "GET", "/metrics", "", client.RightMetrics},
		{"GET /ui", "GET", "/ui", "", "open"}, // the page holds no data: its script reads the API with a token
		{"GET /ui/static/{file}", "GET", "/ui/static/page.js", "", "open"},
		{"GET /v1/debug/pprof/{profile}", "GET", "/v1/debug/pprof/goroutine", "", client.RightDebug},
		{"GET /v1/debug/logs", "GET", "/v1/debug/logs", "", client.RightDebug},
		{"GET /healthz", "GET", "/healthz", "", "open"},
		{"GET /readyz", "GET", "/readyz", "", "open"},
		{"GET /", "GET", "/", "", "open"},
		{"GET /v1/openapi.yaml", "GET", "/v1/openapi.yaml", "", "open"}, // public documentation
		{"POST /v1/acl/bootstrap", "POST", "/v1/acl/bootstrap", "", "open"},
		{"PUT /v1/acl/policy/{name}", "PUT", "/v1/acl/policy/p2", `{"rules":[]}`, client.RightACL},
		{"GET /v1/acl/policy/{name}", "GET", "/v1/acl/policy/p2", "", client.RightACL},
		{"GET /v1/acl/policies", "GET", "/v1/acl/policies", "", client.RightACL},
		{"DELETE /v1/acl/policy/{name}", "DELETE", "/v1/acl/policy/p2", "", client.RightACL},
		{"PUT /v1/acl/token", "PUT", "/v1/acl/token", `{"policies":["only-read"]}`, client.RightACL},
		{"GET /v1/acl/tokens", "GET", "/v1/acl/tokens", "", client.RightACL},
		{"GET /v1/acl/token/{accessor}", "GET", "/v1/acl/token/nope", "", client.RightACL},
		{"DELETE /v1/acl/token/{accessor}", "DELETE", "/v1/acl/token/nope", "", client.RightACL},
		{"GET /v1/acl/token/self", "GET", "/v1/acl/token/self", "", ""},
		{"POST /v1/acl/authorize", "POST", "/v1/acl/authorize", `{"checks":[{"right":"revoke","key":"k/held"},{"right":"acl"}]}`, ""},
	}
	covered := map[string]bool{}
	for _, rt := range routes {
		covered[rt.route] = true
		what := rt.method + " " + rt.path
		switch rt.right {
		case "open":
			if r := do(t, rt.method, url+rt.path, rt.body); r.status == http.StatusForbidden && r.apiErr(t).Error != wire.CodeACLBootstrapped {
				t.Errorf("%s without a token: %d %s, want it open", what, r.status, r.body)
			}
			continue
		case "":
			do(t, rt.method, url+rt.path, rt.body).wantDenied(t, what+" without a token", wire.CodePermissionDenied, "no token")
			// (Registration also checks the worker's groups and keys; this
			// token has every key right.)
			if r := doAs(t, allBut[client.RightACL], rt.method, url+rt.path, rt.body); r.status == http.StatusForbidden {
				t.Errorf("%s with a token: %d %s, want any token accepted", what, r.status, r.body)
			}
			continue
		}
		doAs(t, allBut[rt.right], rt.method, url+rt.path, rt.body).wantDenied(t, what+" without "+rt.right,
			wire.CodePermissionDenied, `"`+rt.right+`"`)
		do(t, rt.method, url+rt.path, rt.body).wantDenied(t, what+" without a token", wire.CodePermissionDenied, "no token")
		doAs(t, "no-such-secret", rt.method, url+rt.path, rt.body).wantDenied(t, what+" with an unknown secret", wire.CodeACLNotFound)
		if r := doAs(t, only[rt.right], rt.method, url+rt.path, rt.body); r.status == http.StatusForbidden {
			t.Errorf("%s with only %s: %d %s, want it allowed", what, rt.right, r.status, r.body)
		}
	}
	for _, rt := range routesOf(t) {
		if !covered[rt.method+" "+rt.template] {
			t.Errorf("route %s %s has no entry in this test: say which right it needs", rt.method, rt.template)
		}
	}
}

// Rules apply to the prefix of the name: a token for scenes/ reads and
// writes there and nowhere else, and lists only under scenes/.
func TestACLPrefixRules(t *testing.T) {
	e := startACL(t, 1)
	url := e.leader().url
	e.policy(t, "scenes", rule("scenes/", client.RightRead, client.RightWrite))
	sec := e.token(t, client.ACLTokenSpec{Policies: []string{"scenes"}}).SecretID
	doAs(t, sec, "PUT", url+"/v1/leases/scenes/1", `{"holder":"t","ttl":"30s"}`).wantStatus(t, "acquire scenes/1", 201)
	doAs(t, sec, "PUT", url+"/v1/leases/jobs/1", `{"holder":"t","ttl":"30s"}`).wantDenied(t, "acquire jobs/1",
		wire.CodePermissionDenied, `"write"`, `key "jobs/1"`)
	doAs(t, sec, "GET", url+"/v1/leases?prefix=scenes/", "").wantStatus(t, "list scenes/", 200)
	doAs(t, sec, "GET", url+"/v1/leases", "").wantDenied(t, "list everything", wire.CodePermissionDenied, `"read"`, `prefix ""`)
	doAs(t, sec, "POST", url+"/v1/renew", `{"holder":"t","leases":[{"key":"scenes/1","token":1},{"key":"jobs/1","token":1}]}`).
		wantDenied(t, "bulk renew with a key outside the rule", wire.CodePermissionDenied, `key "jobs/1"`)
	// The inspection page still opens with ?token= (its script moves the
	// token into the browser's session storage).
	if r := do(t, "GET", url+"/ui?prefix=scenes/&token="+sec, ""); r.status != 200 {
		t.Errorf("/ui with ?token=: %d %s", r.status, r.body)
	}
	// Bearer works like X-Tenure-Token.
	r, err := send("GET", url+"/v1/leases/scenes/1", "", http.Header{"Authorization": {"Bearer " + sec}})
	if err != nil || r.status != 200 {
		t.Errorf("read with Authorization: Bearer: %v %d %s", err, r.status, r.body)
	}
}

// A token bound to a holder prefix acquires, renews and releases only as
// such holders: one worker's token cannot renew or release another
// worker's lease, even with its fencing token; in a bulk renewal, and in a
// blocking acquire, neither.
func TestACLHolderBinding(t *testing.T) {
	e := startACL(t, 1)
	url := e.leader().url
	e.policy(t, "parts", rule("parts/", client.RightRead, client.RightWrite))
	a := e.token(t, client.ACLTokenSpec{Policies: []string{"parts"}, HolderPrefix: "worker-a"}).SecretID
	b := e.token(t, client.ACLTokenSpec{Policies: []string{"parts"}, HolderPrefix: "worker-b"}).SecretID

	r := doAs(t, b, "PUT", url+"/v1/leases/parts/1", `{"holder":"worker-b#1","ttl":"30s"}`)
	r.wantStatus(t, "b acquires", 201)
	tok := r.lease(t).Token
	refused := []struct{ what, method, path, body string }{
		{"acquire as b", "PUT", "/v1/leases/parts/2", `{"holder":"worker-b#1","ttl":"30s"}`},
		{"blocking acquire as b", "PUT", "/v1/leases/parts/1", `{"holder":"worker-b#2","ttl":"30s","wait":"5s"}`},
		{"renew b's lease", "POST", "/v1/renew/parts/1", fmt.Sprintf(`{"holder":"worker-b#1","token":%d}`, tok)},
		{"bulk renew b's lease", "POST", "/v1/renew", fmt.Sprintf(`{"holder":"worker-b#1","leases":[{"key":"parts/1","token":%d}]}`, tok)},
		{"release b's lease", "DELETE", fmt.Sprintf("/v1/leases/parts/1?holder=worker-b%%231&token=%d", tok), ""},
		{"release b's lease (body)", "DELETE", "/v1/leases/parts/1", fmt.Sprintf(`{"holder":"worker-b#1","token":%d}`, tok)},
	}
	for _, rf := range refused {
		doAs(t, a, rf.method, url+rf.path, rf.body).wantDenied(t, "a: "+rf.what, wire.CodePermissionDenied, `"worker-a"`, "worker-b")
	}
	// b's lease is untouched; a works under its own prefix.
	doAs(t, b, "POST", url+"/v1/renew/parts/1", fmt.Sprintf(`{"holder":"worker-b#1","token":%d}`, tok)).wantStatus(t, "b renews", 200)
	r = doAs(t, a, "PUT", url+"/v1/leases/parts/2", `{"holder":"worker-a#1","ttl":"30s","wait":"1s"}`)
	r.wantStatus(t, "a acquires", 201)
	tokA := r.lease(t).Token
	doAs(t, a, "POST", url+"/v1/renew", fmt.Sprintf(`{"holder":"worker-a#1","leases":[{"key":"parts/2","token":%d}]}`, tokA)).wantStatus(t, "a bulk renews", 200)
	doAs(t, a, "DELETE", fmt.Sprintf("%s/v1/leases/parts/2?holder=worker-a%%231&token=%d", url, tokA), "").wantStatus(t, "a releases", 204)
}

// A deleted token is refused at once on every node of a three-node
// cluster: writes and linearizable reads through any node are checked by
// the leader (which applied the deletion before answering it), and a
// stale read on a follower as soon as that follower has applied it.
// Forwarded requests carry the token.
func TestACLTokenDeletedOnEveryNode(t *testing.T) {
	e := startACL(t, 3)
	leader, _ := e.follower()
	e.policy(t, "rw", rule("", client.RightRead, client.RightWrite))
	tok := e.token(t, client.ACLTokenSpec{Policies: []string{"rw"}})
	for i, n := range e.nodes {
		key := fmt.Sprintf("k/%d", i)
		doAs(t, tok.SecretID, "PUT", n.url+"/v1/leases/"+key, `{"holder":"h","ttl":"30s"}`).wantStatus(t, "acquire through "+n.id, 201)
		doAs(t, tok.SecretID, "GET", n.url+"/v1/leases/"+key, "").wantStatus(t, "read through "+n.id, 200)
	}
	doAs(t, e.boot, "DELETE", leader.url+"/v1/acl/token/"+tok.AccessorID, "").wantStatus(t, "delete token", 204)
	for _, n := range e.nodes {
		doAs(t, tok.SecretID, "PUT", n.url+"/v1/leases/k/x", `{"holder":"h","ttl":"30s"}`).wantDenied(t, "acquire through "+n.id, wire.CodeACLNotFound)
		doAs(t, tok.SecretID, "GET", n.url+"/v1/leases/k/0", "").wantDenied(t, "read through "+n.id, wire.CodeACLNotFound)
		harness.WaitUntil(t, 2*time.Second, "stale read refused on "+n.id, func() bool {
			return doAs(t, tok.SecretID, "GET", n.url+"/v1/leases/k/0?stale", "").status == http.StatusForbidden
		})
	}
}

// Tokens and policies survive a snapshot, and a stop and restart of every
// node (which restores the snapshot and replays the log after it); the
// cluster stays bootstrapped.
func TestACLTokensSurviveSnapshotAndRestart(t *testing.T) {
	e := startACL(t, 3)
	e.policy(t, "rw", rule("", client.RightRead, client.RightWrite))
	tok := e.token(t, client.ACLTokenSpec{Policies: []string{"rw"}, HolderPrefix: "h"})
	for _, n := range e.nodes {
		// Wait until the node has applied the token, then snapshot it.
		harness.WaitUntil(t, 2*time.Second, n.id+" knows the token", func() bool {
			return doAs(t, tok.SecretID, "GET", n.url+"/v1/leases?stale", "").status == 200
		})
		doAs(t, e.boot, "POST", n.url+"/v1/operator/snapshot", "").wantStatus(t, "snapshot "+n.id, 200)
	}
	for i := range e.nodes {
		e.cluster.Stop(i)
	}
	for i := range e.nodes {
		e.cluster.Restart(i)
	}
	l := e.leader()
	doAs(t, tok.SecretID, "PUT", l.url+"/v1/leases/after", `{"holder":"h1","ttl":"30s"}`).wantStatus(t, "acquire after restart", 201)
	doAs(t, tok.SecretID, "PUT", l.url+"/v1/leases/after2", `{"holder":"x1","ttl":"30s"}`).wantDenied(t, "binding after restart", wire.CodePermissionDenied)
	do(t, "POST", l.url+"/v1/acl/bootstrap", "").wantDenied(t, "bootstrap after restart", wire.CodeACLBootstrapped)
	for _, n := range e.nodes {
		harness.WaitUntil(t, 5*time.Second, n.id+" knows the token after restart", func() bool {
			return doAs(t, tok.SecretID, "GET", n.url+"/v1/leases/after?stale", "").status == 200
		})
	}
}

// The default policy allow lets requests without a token do everything
// but ACLs; tokens still get only their own rights.
func TestACLDefaultAllow(t *testing.T) {
	c := startClusterWith(t, 1, inproc.Options{Serve: serveAPI, Tweak: func(cfg *cluster.Config) {
		cfg.ACLEnabled, cfg.ACLDefaultPolicy = true, cluster.ACLAllow
	}})
	url := c.leader().url
	do(t, "PUT", url+"/v1/leases/k", `{"holder":"h","ttl":"30s"}`).wantStatus(t, "anonymous acquire", 201)
	do(t, "GET", url+"/metrics", "").wantStatus(t, "anonymous metrics", 200)
	do(t, "GET", url+"/v1/acl/tokens", "").wantDenied(t, "anonymous token list", wire.CodePermissionDenied, `"acl"`)
}

// /metrics needs operator, unless -metrics-open.
func TestACLMetricsOpen(t *testing.T) {
	serve := func(n *cluster.Node, reg *prometheus.Registry, logger hclog.Logger) (http.Handler, error) {
		api := DefaultConfig()
		api.Node, api.Gatherer, api.MetricsOpen = NodeOf(n), reg, true
		return New(api)
	}
	c := startACLClusterWith(t, 1, inproc.Options{Serve: serve})
	url := c.leader().url
	do(t, "GET", url+"/metrics", "").wantStatus(t, "metrics without a token", 200)
	do(t, "GET", url+"/v1/status", "").wantDenied(t, "status without a token", wire.CodePermissionDenied, "no token")
}

// Every request that changes state is logged with its token's accessor id
// by the node that serves it; refused ones too.
func TestACLRequestsLogAccessor(t *testing.T) {
	logs := &harness.Buffer{}
	serve := func(n *cluster.Node, reg *prometheus.Registry, _ hclog.Logger) (http.Handler, error) {
		api := DefaultConfig()
		api.Node, api.Gatherer = NodeOf(n), reg
		api.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})
		return New(api)
	}
	c := startACLClusterWith(t, 1, inproc.Options{Serve: serve})
	e := &aclEnv{testCluster: c}
	r := do(t, "POST", c.leader().url+"/v1/acl/bootstrap", "")
	var boot client.ACLToken
	r.decode(t, &boot)
	e.boot = boot.SecretID
	doAs(t, e.boot, "PUT", c.leader().url+"/v1/leases/k", `{"holder":"h","ttl":"30s"}`).wantStatus(t, "acquire", 201)
	do(t, "DELETE", c.leader().url+"/v1/leases/k?holder=h&token=1", "").wantStatus(t, "release without a token", 403)
	out := logs.String()
	for _, want := range []string{
		"acl_request: method=PUT path=/v1/leases/k accessor=" + boot.AccessorID + " status=201",
		"acl_request: method=DELETE path=/v1/leases/k accessor=\"\"",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// Revoke by holder needs the revoke right on every key (a rule on the
// prefix ""): the holder's keys are only known when the command applies.
// A token with revoke on a prefix may revoke keys under it, not holders.
func TestACLRevokeHolderNeedsEveryKey(t *testing.T) {
	e := startACL(t, 1)
	url := e.leader().url
	e.policy(t, "revoke-k", rule("k/", client.RightRevoke))
	secret := e.token(t, client.ACLTokenSpec{Policies: []string{"revoke-k"}}).SecretID
	if r := doAs(t, secret, "POST", url+"/v1/revoke/k/x", ""); r.status == http.StatusForbidden {
		t.Errorf("revoke of k/x with revoke on k/: %d %s, want it allowed", r.status, r.body)
	}
	doAs(t, secret, "POST", url+"/v1/revoke?holder=h1", "").wantDenied(t, "revoke by holder with revoke on k/ only",
		wire.CodePermissionDenied, `"revoke"`)
}

// A forced disable or prohibit frees the holder's lease at once, as a
// forced revoke does: with only the groups right on the key it is refused,
// and nothing changes; with revoke too it is done. Without force (the
// lease ends at its holder's deadline) groups is enough.
func TestACLForcedControlNeedsRevoke(t *testing.T) {
	e := startACL(t, 1)
	url := e.leader().url
	e.policy(t, "groups-k", rule("k/", client.RightGroups))
	e.policy(t, "groups-revoke-k", rule("k/", client.RightGroups, client.RightRevoke))
	groups := e.token(t, client.ACLTokenSpec{Policies: []string{"groups-k"}}).SecretID
	both := e.token(t, client.ACLTokenSpec{Policies: []string{"groups-revoke-k"}}).SecretID
	doAs(t, e.boot, "PUT", url+"/v1/leases/k/a", `{"holder":"h1","ttl":"30s"}`).wantStatus(t, "acquire", http.StatusCreated)

	doAs(t, groups, "PATCH", url+"/v1/controls/k/a?force=true", `{"disabled":true}`).wantDenied(t, "forced edit with groups only",
		wire.CodePermissionDenied, `"revoke"`)
	doAs(t, groups, "PUT", url+"/v1/controls/k/a?force=true", `{"disabled":true,"prohibited":[]}`).wantDenied(t, "forced put with groups only",
		wire.CodePermissionDenied, `"revoke"`)
	r := doAs(t, e.boot, "GET", url+"/v1/leases/k/a", "")
	r.wantStatus(t, "get", http.StatusOK)
	if l := r.lease(t); l.State != "held" || l.Ending != "" {
		t.Fatalf("after refused forced controls: %+v, want held and not ending", l)
	}
	doAs(t, groups, "PATCH", url+"/v1/controls/k/a", `{"prohibit":["h9"]}`).wantStatus(t, "edit with groups", http.StatusOK)
	r = doAs(t, both, "PATCH", url+"/v1/controls/k/a?force=true", `{"disabled":true}`)
	r.wantStatus(t, "forced edit with groups and revoke", http.StatusOK)
	var ctl client.KeyControl
	r.decode(t, &ctl)
	// The token has no read on k/: the ended lease is answered without
	// its holder and token.
	if len(ctl.Ended) != 1 || !ctl.Ended[0].Forced || ctl.Ended[0].Key != "k/a" || ctl.Ended[0].Holder != "" {
		t.Errorf("forced edit answered %s, want k/a's lease ended by force, its holder left out", r.body)
	}
}

// TestSnapshotRestoreRefusedOnAFollowerBeforeForwarding: a follower
// refuses a restore without the operator right itself, before it reads
// (and buffers, to forward) a body of up to 512 MiB: also with no leader
// to forward to, the answer is the refusal, not no_leader.
func TestSnapshotRestoreRefusedOnAFollowerBeforeForwarding(t *testing.T) {
	c := startACLCluster(t, 3)
	l, f := c.follower()
	for i, n := range c.nodes {
		if n == l {
			c.cluster.Stop(i)
		}
	}
	body := strings.Repeat("x", 4096)
	do(t, "PUT", f.url+"/v1/snapshot", body).wantDenied(t, "PUT /v1/snapshot on a follower, without a token and without a leader", wire.CodePermissionDenied, "no token")
}

// A token that may read a group but not some of its keys is shown none of
// those keys in any answer about the group: not the key, its target, its
// holder or its token. Each answer says how many keys it left out
// (hidden_keys), and the workers' counts cover only the keys shown. Routes
// that would name every key need read on every name and refuse it. Every
// case is asked of the leader and of each follower (which forwards
// linearizable reads and answers stale ones from its own state).
func TestACLGroupAnswersHideKeysTheTokenMayNotRead(t *testing.T) {
	e := bootstrapACL(t, startACLClusterWith(t, 3, inproc.Options{Gossip: true, Serve: serveAPI}))
	c := e.testCluster
	url := c.leader().url
	doAs(t, e.boot, "PUT", url+"/v1/groups/parts", `{"keys":["app/a1","app/a2","other/g1","other/g2"]}`).wantStatus(t, "put group", 200)
	// other/g1 is held by someone the token must not learn of.
	r := doAs(t, e.boot, "PUT", url+"/v1/leases/other/g1", `{"holder":"hidden-holder","ttl":"1m"}`)
	r.wantStatus(t, "acquire other/g1", 201)
	hiddenToken := r.lease(t).Token
	runWorkerAs(t, c, "parts", e.boot, worker.WithWorkerID("w1"))
	harness.WaitFor(t, 20*time.Second, func() error {
		var a client.Assignment
		doAs(t, e.boot, "GET", url+"/v1/groups/parts/assignment", "").decode(t, &a)
		var g client.Group
		doAs(t, e.boot, "GET", url+"/v1/groups/parts", "").decode(t, &g)
		held := 0
		for _, k := range g.Keys {
			if k.Holder != "" {
				held++
			}
		}
		if len(a.Assignment) != 4 || held != 4 {
			return fmt.Errorf("assignment %v, group %+v: want 4 keys targeted and held", a.Assignment, g.Keys)
		}
		return nil
	})
	e.policy(t, "app-reader", rule("parts", client.RightRead), rule("app/", client.RightRead))
	sec := e.token(t, client.ACLTokenSpec{Policies: []string{"app-reader"}}).SecretID
	for _, n := range c.nodes {
		// Each node has applied the token and the held keys.
		harness.WaitFor(t, 10*time.Second, func() error {
			r := doAs(t, e.boot, "GET", n.url+"/v1/groups/parts?stale", "")
			if r.status != 200 || bytes.Count(r.body, []byte(`"state":"held"`)) != 4 {
				return fmt.Errorf("%s: %d %s, want the 4 keys held", n.id, r.status, r.body)
			}
			if r := doAs(t, sec, "GET", n.url+"/v1/acl/token/self?stale", ""); r.status != 200 {
				return fmt.Errorf("%s does not know the token yet: %d", n.id, r.status)
			}
			return nil
		})
	}

	tests := []struct {
		name, path string
		// shown are the keys the answer must list; hidden how many it
		// must say it left out; refused: the route needs read on every
		// name and answers 403.
		shown   []string
		hidden  int
		refused bool
	}{
		{"group", "/v1/groups/parts", []string{"app/a1", "app/a2"}, 2, false},
		{"group stale", "/v1/groups/parts?stale", []string{"app/a1", "app/a2"}, 2, false},
		{"group blocking", "/v1/groups/parts?index=1&wait=1s", []string{"app/a1", "app/a2"}, 2, false},
		{"group page", "/v1/groups/parts?limit=1", []string{"app/a1"}, 2, false},
		{"group next page", "/v1/groups/parts?limit=1&cursor=" + encodeCursor("app/a1"), []string{"app/a2"}, 2, false},
		{"group page of hidden keys", "/v1/groups/parts?limit=1&cursor=" + encodeCursor("app/a2"), nil, 2, false},
		{"assignment", "/v1/groups/parts/assignment", []string{"app/a1", "app/a2"}, 2, false},
		{"assignment stale", "/v1/groups/parts/assignment?stale", []string{"app/a1", "app/a2"}, 2, false},
		{"assignment blocking", "/v1/groups/parts/assignment?index=1&wait=1s", []string{"app/a1", "app/a2"}, 2, false},
		{"assignment of w1", "/v1/groups/parts/assignment?worker=w1", []string{"app/a1", "app/a2"}, 2, false},
		{"events", "/v1/events?prefix=app/", nil, -1, false},
		{"events of the group", "/v1/events?prefix=parts", nil, -1, false},
		{"group list", "/v1/groups", nil, -1, true},
		{"workers", "/v1/workers?id=w1", nil, -1, true},
		{"workers stale", "/v1/workers?stale", nil, -1, true},
		{"placement health", "/v1/health/placement", nil, -1, true},
		{"leases of the holder", "/v1/leases?holder=hidden-holder", nil, -1, true},
	}
	// Every GET route is either above or answers nothing about a group's
	// keys that its own check does not cover: a new route must say which.
	covered := map[string]bool{}
	srv := serveFake(t, (&fakeReplica{}).node()).(*Server)
	for _, tt := range tests {
		var match mux.RouteMatch
		req, _ := http.NewRequest("GET", tt.path, nil)
		if srv.router.Match(req, &match) && match.Route != nil {
			tpl, _ := match.Route.GetPathTemplate()
			covered[tpl] = true
		}
	}
	notAboutGroupKeys := map[string]string{
		"/v1/leases/{key:.+}":       "one key, read on that key",
		"/v1/controls/{key:.+}":     "one key's controls, read on that key",
		"/v1/acl/tokens":            "acl right",
		"/v1/acl/token/self":        "the token itself",
		"/v1/acl/token/{accessor}":  "acl right",
		"/v1/acl/policies":          "acl right",
		"/v1/acl/policy/{name}":     "acl right",
		"/v1/snapshot":              "operator right: the whole state",
		"/v1/operator/keyring":      "operator right: gossip keys",
		"/v1/status":                "servers and indexes",
		"/v1/members":               "gossip members and their groups, no keys",
		"/v1/stream":                "no answer of its own: each frame's is its route's",
		"/healthz":                  "no data",
		"/readyz":                   "no data",
		"/v1/openapi.yaml":          "no data",
		"/metrics":                  "operator right (or -metrics-open): group names and counts",
		"/v1/debug/pprof/{profile}": "operator right",
		"/v1/debug/logs":            "operator right: the server's log",
		"/ui":                       "no data",
		"/ui/static/{file}":         "no data",
		"/":                         "no data",
	}
	for _, rt := range routesOf(t) {
		if rt.method == http.MethodGet && !covered[rt.template] && notAboutGroupKeys[rt.template] == "" {
			t.Errorf("GET %s is neither in this test nor said to answer nothing about a group's keys", rt.template)
		}
	}
	for _, n := range c.nodes {
		for _, tt := range tests {
			t.Run(n.id+"/"+tt.name, func(t *testing.T) {
				hideKeysCase(t, n.url, sec, tt.path, tt.shown, tt.hidden, tt.refused, hiddenToken)
			})
		}
	}
}

// hideKeysCase asks path of url with the secret sec and checks the
// answer (TestACLGroupAnswersHideKeysTheTokenMayNotRead): refused with
// 403, or naming no key under other/ and not hidden-holder, listing the
// keys shown and saying hidden_keys is hidden (unless hidden < 0).
func hideKeysCase(t *testing.T, url, sec, path string, shown []string, hidden int, refused bool, hiddenToken uint64) {
	t.Helper()
	r := doAs(t, sec, "GET", url+path, "")
	if refused {
		r.wantDenied(t, path, wire.CodePermissionDenied, `"read"`)
		return
	}
	r.wantStatus(t, path, 200)
	for _, leak := range []string{"other/", "hidden-holder"} {
		if bytes.Contains(r.body, []byte(leak)) {
			t.Errorf("GET %s names %q, which the token may not read: %s", path, leak, r.body)
		}
	}
	if hidden < 0 {
		return
	}
	var body struct {
		Keys []struct {
			Key   string `json:"key"`
			Token uint64 `json:"token"`
		} `json:"keys"`
		Assignment map[string]string `json:"assignment"`
		Workers    []client.GroupWorker
		Hidden     *int `json:"hidden_keys"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, r.body)
	}
	var got []string
	for _, k := range body.Keys {
		got = append(got, k.Key)
		if k.Token == hiddenToken {
			t.Errorf("GET %s shows key %s with the token %d of other/g1", path, k.Key, k.Token)
		}
	}
	for k := range body.Assignment {
		got = append(got, k)
	}
	slices.Sort(got)
	if !slices.Equal(got, shown) {
		t.Errorf("GET %s shows keys %q, want %q", path, got, shown)
	}
	if body.Hidden == nil || *body.Hidden != hidden {
		t.Errorf("GET %s says hidden_keys %v, want %d: %s", path, body.Hidden, hidden, r.body)
	}
	for _, w := range body.Workers {
		if w.Targets > 2 || w.Holds > 2 {
			t.Errorf("GET %s counts worker %s with %d targets and %d held keys, more than the 2 keys the token may read", path, w.ID, w.Targets, w.Holds)
		}
	}
}

// Refused requests are logged within a bound, whatever their number: 2,000
// requests with unknown secrets and 200 without a token write at most
// refusalLines lines per reason per refusalInterval, then one line per
// reason and interval that counts the refusals left out; the lines and the
// counts account for every refusal, no secret is logged, and
// tenure_acl_refusals_total counts each refusal by code.
func TestACLRefusalsLogIsBoundedAndCounted(t *testing.T) {
	const refusalLines, refusalInterval = DefaultRefusalLogLines, time.Second
	logs := &harness.Buffer{}
	regs := make(chan *prometheus.Registry, 1)
	serve := func(n *cluster.Node, reg *prometheus.Registry, _ hclog.Logger) (http.Handler, error) {
		api := testAPIConfig(n, reg, hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info}))
		api.RefusalLogLines, api.RefusalLogInterval = refusalLines, refusalInterval
		regs <- reg
		return New(api)
	}
	c := startACLClusterWith(t, 1, inproc.Options{Serve: serve})
	reg := <-regs
	url := c.leader().url
	const wrong, anonymous = 2000, 200
	start := time.Now()
	jobs := make(chan int)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			var err error
			for i := range jobs {
				h := http.Header{}
				if i < wrong {
					h.Set(client.HeaderToken, fmt.Sprintf("wrong-secret-%04d", i))
				}
				r, e := send("PUT", url+"/v1/leases/k", `{"holder":"h","ttl":"30s"}`, h)
				if e == nil && r.status != http.StatusForbidden {
					e = fmt.Errorf("request %d: status %d, want 403: %s", i, r.status, r.body)
				}
				if err == nil {
					err = e
				}
			}
			errs <- err
		}()
	}
	for i := range wrong + anonymous {
		jobs <- i
	}
	close(jobs)
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	// Each reason's windows: those the requests spanned, and one more for
	// a window already open when they began.
	windows := int(elapsed/refusalInterval) + 2
	bound := 2 * windows * (refusalLines + 1)
	var logged, suppressed int
	accounted := func() (lines int) {
		logged, suppressed = 0, 0
		for _, line := range strings.Split(logs.String(), "\n") {
			switch {
			case strings.Contains(line, "acl_request:"):
				logged++
			case strings.Contains(line, "acl_requests_suppressed:"):
				var n int
				if _, err := fmt.Sscanf(line[strings.Index(line, "suppressed=")+len("suppressed="):], "%d", &n); err != nil {
					t.Fatalf("summary line %q: %v", line, err)
				}
				suppressed += n
			default:
				continue
			}
			lines++
		}
		return lines
	}
	if lines := accounted(); lines > bound {
		t.Errorf("%d refused requests in %v wrote %d log lines, want at most %d (%d per reason per %v, and a summary)",
			wrong+anonymous, elapsed.Round(time.Millisecond), lines, bound, refusalLines, refusalInterval)
	}
	harness.WaitFor(t, 3*refusalInterval, func() error {
		accounted()
		if logged+suppressed != wrong+anonymous {
			return fmt.Errorf("the log shows %d refusals and counts %d left out, want %d in all", logged, suppressed, wrong+anonymous)
		}
		return nil
	})
	if bytes.Contains([]byte(logs.String()), []byte("wrong-secret-")) {
		t.Error("the log shows a secret")
	}
	want := map[string]float64{wire.CodeACLNotFound: wrong, wire.CodePermissionDenied: anonymous}
	got := inproc.CounterBy(t, reg, "tenure_acl_refusals_total", "code")
	for code, n := range want {
		if got[code] != n {
			t.Errorf("tenure_acl_refusals_total{code=%q} = %v, want %v", code, got[code], n)
		}
	}
}

// victimSecret is the lease secret of the leases a victim token holds in
// the tests of what other tokens learn of them and can do to them.
const victimSecret = "v1c71m5ec2e7v1c71m5ec2e7v1c71m5e"

// acquireAsVictim acquires key at url with the ACL token secret acl, as
// holder worker-1 with metadata addr 10.0.0.1:80 and the lease secret
// victimSecret, and returns the new lease.
func acquireAsVictim(t *testing.T, acl, url, key string) client.LeaseInfo {
	t.Helper()
	r := rawAs(t, acl, "PUT", url+"/v1/leases/"+key, `{"holder":"worker-1","ttl":"30s","metadata":{"addr":"10.0.0.1:80"},"secret":"`+victimSecret+`"}`)
	r.wantStatus(t, "victim acquires "+key, http.StatusCreated)
	return r.lease(t)
}

// TestConflictAnswersShowTheLeaseOnlyToATokenThatReadsTheKey: a token
// with write on a prefix and no read (a worker that only acquires) is
// refused GET of a lease, so the 409 answers of an acquire of a held key
// and of a release under another holder's name, and the leases a revoke
// or a key control ends, do not show it the holder, token or metadata
// either; the codes stay (the Go client still matches ErrHeld with no
// lease), and a token that reads the key still gets the lease.
func TestConflictAnswersShowTheLeaseOnlyToATokenThatReadsTheKey(t *testing.T) {
	e := startACL(t, 1)
	url := e.leader().url
	e.policy(t, "victim", rule("parts/", client.RightRead, client.RightWrite))
	e.policy(t, "writeonly", rule("parts/", client.RightWrite))
	e.policy(t, "operator", rule("parts/", client.RightRevoke, client.RightGroups))
	victim := e.token(t, client.ACLTokenSpec{Policies: []string{"victim"}}).SecretID
	attacker := e.token(t, client.ACLTokenSpec{Policies: []string{"writeonly"}}).SecretID
	operator := e.token(t, client.ACLTokenSpec{Policies: []string{"operator"}}).SecretID
	const mine = "a77ac3e2a77ac3e2a77ac3e2a77ac3e2"
	tok := acquireAsVictim(t, victim, url, "parts/1").Token
	rawAs(t, attacker, "GET", url+"/v1/leases/parts/1", "").wantStatus(t, "attacker reads", http.StatusForbidden)

	var leaks []string
	leaked := func(what string, r reply) {
		b := string(r.body)
		if strings.Contains(b, "worker-1") || strings.Contains(b, "10.0.0.1:80") || strings.Contains(b, fmt.Sprintf(`"token":%d`, tok)) ||
			strings.Contains(b, fmt.Sprintf("token %d", tok)) {
			leaks = append(leaks, fmt.Sprintf("%s: %d %s", what, r.status, strings.TrimSpace(b)))
		}
	}
	for _, a := range []struct{ what, method, path, body, code, field string }{
		{"acquire of the held key", "PUT", "/v1/leases/parts/1", `{"holder":"me","ttl":"30s","secret":"` + mine + `"}`, wire.CodeHeld, ""},
		{"acquire under the holder's name", "PUT", "/v1/leases/parts/1", `{"holder":"worker-1","ttl":"30s","secret":"` + mine + `"}`, wire.CodeHeld, "secret"},
		{"release under another name", "DELETE", "/v1/leases/parts/1", fmt.Sprintf(`{"holder":"me","token":%d,"secret":"%s"}`, tok, mine), wire.CodeNotHolder, ""},
		{"release with a guessed token", "DELETE", "/v1/leases/parts/1", fmt.Sprintf(`{"holder":"me","token":%d,"secret":"%s"}`, tok+100, mine), wire.CodeNotHolder, ""},
	} {
		r := rawAs(t, attacker, a.method, url+a.path, a.body)
		r.wantRefused(t, a.what, http.StatusConflict, a.code, a.field, "")
		if e := r.apiErr(t); e.Lease != nil {
			t.Errorf("%s: lease %+v answered to a token without read", a.what, e.Lease)
		}
		leaked(a.what, r)
	}

	// The Go client still tells held from the rest, with no lease.
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{url}
	cfg.Token = attacker
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = cl.Leases().Acquire(context.Background(), "parts/1", client.AcquireRequest{Holder: "me", TTL: 30 * time.Second})
	var ae *client.APIError
	if !errors.Is(err, client.ErrHeld) || !errors.As(err, &ae) || ae.Lease != nil {
		t.Errorf("client acquire of the held key as a writer: %v (%+v), want ErrHeld with no lease", err, ae)
	}

	// A token that reads the key gets the lease in the same answer.
	r := rawAs(t, victim, "PUT", url+"/v1/leases/parts/1", `{"holder":"me","ttl":"30s","secret":"`+mine+`"}`)
	r.wantRefused(t, "acquire of the held key by a reader", http.StatusConflict, wire.CodeHeld, "", "")
	if l := r.apiErr(t).Lease; l == nil || l.Holder != "worker-1" || l.Token != tok {
		t.Errorf("acquire of the held key by a reader: lease %+v, want worker-1's token %d", l, tok)
	}

	// Revoke and key controls, by a token with revoke and groups but not read.
	r = rawAs(t, operator, "POST", url+"/v1/revoke/parts/1", "")
	r.wantStatus(t, "revoke by an operator without read", http.StatusOK)
	var rv client.RevokeResult
	r.decode(t, &rv)
	if len(rv.Revoked) != 1 || rv.Revoked[0].Key != "parts/1" || rv.Revoked[0].Reason != client.ReasonRevoked {
		t.Errorf("revoke answered %+v, want the lease of parts/1 revoked", rv.Revoked)
	}
	leaked("revoke", r)
	tok = acquireAsVictim(t, victim, url, "parts/2").Token
	r = rawAs(t, operator, "PUT", url+"/v1/controls/parts/2", `{"disabled":true}`)
	r.wantStatus(t, "disable by an operator without read", http.StatusOK)
	leaked("disable (ended)", r)
	tok = acquireAsVictim(t, victim, url, "parts/3").Token
	r = rawAs(t, operator, "PATCH", url+"/v1/controls/parts/3", `{"prohibit":["worker-1"]}`)
	r.wantStatus(t, "prohibit by an operator without read", http.StatusOK)
	var ctl client.KeyControl
	r.decode(t, &ctl)
	if len(ctl.Ended) != 1 || ctl.Ended[0].Holder != "" || ctl.Ended[0].Token != 0 {
		leaks = append(leaks, fmt.Sprintf("prohibit (ended): %+v", ctl.Ended))
	}
	if len(leaks) > 0 {
		t.Errorf("a token without read on parts/ learned the lease:\n%s", strings.Join(leaks, "\n"))
	}
}

// TestMembersShowAWorkersHolderAndGroupsOnlyToAReaderOfEveryKey: GET
// /v1/members needs any valid token. A token with read on mine/ only is
// refused GET /v1/workers (read on every name), and the group and
// assignment answers hide the keys of other/ from it, so the members list
// must not tell it that worker w-other holds leases of group other as
// holder other-holder-1: it still lists the servers in full (workers find
// them there) and the worker by name, without holder and groups. A token
// that reads every key sees them. The content hash is of what each token
// sees, so a blocking read waits on that.
func TestMembersShowAWorkersHolderAndGroupsOnlyToAReaderOfEveryKey(t *testing.T) {
	e := bootstrapACL(t, startACLClusterWith(t, 1, inproc.Options{Gossip: true, Serve: serveAPI}))
	url := e.leader().url
	e.policy(t, "mine", rule("mine/", client.RightRead, client.RightWrite))
	mine := e.token(t, client.ACLTokenSpec{Policies: []string{"mine"}}).SecretID

	meta, _ := json.Marshal(map[string]any{"role": "worker", "id": "w-other", "holder": "other-holder-1", "groups": []string{"other"}, "capacity": 1})
	inproc.Forge(t, "w-other", meta, e.cluster.GossipAddr(0))

	rawAs(t, mine, "GET", url+"/v1/workers", "").wantStatus(t, "workers list with read on mine/", http.StatusForbidden)
	harness.WaitUntil(t, 10*time.Second, "the server to see w-other", func() bool {
		return strings.Contains(string(rawAs(t, e.boot, "GET", url+"/v1/members", "").body), "w-other")
	})
	r := rawAs(t, mine, "GET", url+"/v1/members", "")
	r.wantStatus(t, "members with read on mine/", http.StatusOK)
	if strings.Contains(string(r.body), "other-holder-1") || strings.Contains(string(r.body), `"other"`) {
		t.Errorf("a token with read on mine/ only learned another worker's holder and groups: %s", strings.TrimSpace(string(r.body)))
	}
	var seen wire.MemberList
	r.decode(t, &seen)
	var server, worker bool
	for _, m := range seen.Members {
		server = server || (m.Role == "server" && m.Meta.HTTPAddr != "" && m.Addr != "")
		worker = worker || (m.Name == "w-other" && m.Meta.ID == "w-other")
	}
	if !server || !worker {
		t.Errorf("members with read on mine/: %+v, want the server in full and w-other by name", seen.Members)
	}
	hash := r.header.Get(client.HeaderContentHash)
	if want := contentHash(seen); hash != want {
		t.Errorf("content hash %s, want %s: the hash of the answer this token got", hash, want)
	}
	all := rawAs(t, e.boot, "GET", url+"/v1/members", "")
	if !strings.Contains(string(all.body), "other-holder-1") || !strings.Contains(string(all.body), `"groups":["other"]`) {
		t.Errorf("a token that reads every key got no holder and groups of w-other: %s", all.body)
	}
	if all.header.Get(client.HeaderContentHash) == hash {
		t.Errorf("the two tokens got the same content hash %s for different answers", hash)
	}
}

// Issue 24, finding 5: a token with write on a prefix and no holder
// binding (the default of tenure acl token create) knows a live lease's
// holder and token from a read. With them alone it can neither acquire
// the lease again (and so get its token back or replace its metadata),
// nor renew it, nor release it; the lease stays as it was. Its acquirer,
// with the secret, keeps all of that; no read shows the secret.
func TestLeaseSecretNotHolderNameMakesTheHolder(t *testing.T) {
	e := startACL(t, 1)
	url := e.leader().url
	e.policy(t, "parts", rule("parts/", client.RightRead, client.RightWrite))
	victim := e.token(t, client.ACLTokenSpec{Policies: []string{"parts"}}).SecretID
	attacker := e.token(t, client.ACLTokenSpec{Policies: []string{"parts"}}).SecretID
	const secret = victimSecret
	const guess = "0123456789abcdef0123456789abcdef"

	if got := acquireAsVictim(t, victim, url, "parts/1"); got.Secret != secret {
		t.Fatalf("acquire answered secret %q, want the request's", got.Secret)
	}
	// What a reader learns: holder and token, never the secret.
	r := rawAs(t, attacker, "GET", url+"/v1/leases/parts/1", "")
	r.wantStatus(t, "attacker reads", http.StatusOK)
	seen := r.lease(t)
	if seen.Holder != "worker-1" || seen.Secret != "" || strings.Contains(string(r.body), secret) {
		t.Fatalf("read = %s, want holder worker-1 and no secret", r.body)
	}

	tok := seen.Token
	attacks := []struct {
		what, method, path, body string
		status                   int
		code                     string
	}{
		{"acquire under the holder's name", "PUT", "/v1/leases/parts/1", `{"holder":"worker-1","ttl":"30s"}`, 409, wire.CodeHeld},
		{"acquire with a guessed secret", "PUT", "/v1/leases/parts/1", `{"holder":"worker-1","ttl":"30s","secret":"` + guess + `"}`, 409, wire.CodeHeld},
		{"replace the metadata", "PUT", "/v1/leases/parts/1", `{"holder":"worker-1","ttl":"30s","metadata":{"addr":"6.6.6.6:80"}}`, 409, wire.CodeHeld},
		{"renew", "POST", "/v1/renew/parts/1", fmt.Sprintf(`{"holder":"worker-1","token":%d}`, tok), 400, wire.CodeInvalidSecret},
		{"renew with a guessed secret", "POST", "/v1/renew/parts/1", fmt.Sprintf(`{"holder":"worker-1","token":%d,"secret":"%s"}`, tok, guess), 409, wire.CodeWrongSecret},
		{"bulk renew", "POST", "/v1/renew", fmt.Sprintf(`{"holder":"worker-1","leases":[{"key":"parts/1","token":%d}]}`, tok), 400, wire.CodeInvalidSecret},
		{"release", "DELETE", fmt.Sprintf("/v1/leases/parts/1?holder=worker-1&token=%d", tok), "", 400, wire.CodeInvalidSecret},
		{"release with a guessed secret", "DELETE", "/v1/leases/parts/1", fmt.Sprintf(`{"holder":"worker-1","token":%d,"secret":"%s"}`, tok, guess), 409, wire.CodeWrongSecret},
	}
	for _, a := range attacks {
		rawAs(t, attacker, a.method, url+a.path, a.body).wantRefused(t, "attacker: "+a.what, a.status, a.code, "secret", "")
	}
	r = rawAs(t, attacker, "POST", url+"/v1/renew", fmt.Sprintf(`{"holder":"worker-1","secret":"%s","leases":[{"key":"parts/1","token":%d}]}`, guess, tok))
	r.wantStatus(t, "attacker bulk renews with a guessed secret", http.StatusOK)
	var bulk wire.RenewManyResults
	r.decode(t, &bulk)
	if len(bulk.Results) != 1 || bulk.Results[0].OK || bulk.Results[0].Error != wire.CodeWrongSecret {
		t.Fatalf("attacker's bulk renewal = %s, want one result refused with %s", r.body, wire.CodeWrongSecret)
	}
	after := rawAs(t, attacker, "GET", url+"/v1/leases/parts/1", "").lease(t)
	if !after.Held() || after.Token != tok || after.ModifyIndex != seen.ModifyIndex || after.Metadata["addr"] != "10.0.0.1:80" {
		t.Fatalf("lease after the attacks = %+v, want it as it was (%+v)", after, seen)
	}

	// The acquirer's retry (same secret) gets the same lease and token.
	r = rawAs(t, victim, "PUT", url+"/v1/leases/parts/1", `{"holder":"worker-1","ttl":"30s","secret":"`+secret+`"}`)
	r.wantStatus(t, "victim acquires again", http.StatusOK)
	if got := r.lease(t); got.Token != tok || got.Secret != secret {
		t.Fatalf("retry = token %d secret %q, want token %d and the secret", got.Token, got.Secret, tok)
	}
	rawAs(t, victim, "POST", url+"/v1/renew", fmt.Sprintf(`{"holder":"worker-1","secret":"%s","leases":[{"key":"parts/1","token":%d}]}`, secret, tok)).
		wantStatus(t, "victim renews", http.StatusOK)

	// No read shows the secret: the lease, the list, the events, a backup,
	// the metrics, the server's recent log lines.
	for _, read := range []struct{ acl, path string }{
		{attacker, "/v1/leases/parts/1"}, {attacker, "/v1/leases?prefix=parts/"}, {attacker, "/v1/events?prefix=parts/"}, {e.boot, "/v1/events"},
		{e.boot, "/v1/snapshot"}, {e.boot, "/v1/leases/parts/1?stale"}, {e.boot, "/metrics"}, {e.boot, "/v1/debug/logs"},
	} {
		r := rawAs(t, read.acl, "GET", url+read.path, "")
		r.wantStatus(t, "read "+read.path, http.StatusOK)
		if strings.Contains(string(r.body), secret) || strings.Contains(string(r.body), `"secret"`) {
			t.Errorf("GET %s shows the lease secret: %.300s", read.path, r.body)
		}
	}

	rawAs(t, victim, "DELETE", url+"/v1/leases/parts/1", fmt.Sprintf(`{"holder":"worker-1","token":%d,"secret":"%s"}`, tok, secret)).
		wantStatus(t, "victim releases", http.StatusNoContent)
}

// A raw caller that sends no secret gets one made by the server, in the
// acquire's answer only, and renews and releases with it.
func TestLeaseSecretMadeByTheServer(t *testing.T) {
	url := startCluster(t, 1).leader().url
	r := rawAs(t, "", "PUT", url+"/v1/leases/k", `{"holder":"h","ttl":"30s"}`)
	r.wantStatus(t, "acquire", http.StatusCreated)
	l := r.lease(t)
	if len(l.Secret) != 32 {
		t.Fatalf("acquire without a secret answered secret %q, want 32 hex digits", l.Secret)
	}
	rawAs(t, "", "POST", url+"/v1/renew/k", fmt.Sprintf(`{"holder":"h","token":%d,"secret":"%s"}`, l.Token, l.Secret)).wantStatus(t, "renew", http.StatusOK)
	// Asking again without a secret is another caller's acquisition.
	rawAs(t, "", "PUT", url+"/v1/leases/k", `{"holder":"h","ttl":"30s"}`).wantRefused(t, "acquire again without the secret", 409, wire.CodeHeld, "secret", "")
	rawAs(t, "", "DELETE", fmt.Sprintf("%s/v1/leases/k?holder=h&token=%d&secret=%s", url, l.Token, l.Secret), "").wantStatus(t, "release", http.StatusNoContent)
}

// authorizeAs asks POST /v1/acl/authorize as secret ("" for none) and
// returns the answers, failing unless they echo the checks in order.
func authorizeAs(t *testing.T, url, secret string, checks []client.ACLCheck) []bool {
	t.Helper()
	r := doAs(t, secret, "POST", url+"/v1/acl/authorize", mustJSON(t, wire.ACLAuthorizeBody{Checks: checks}))
	r.wantStatus(t, "authorize", http.StatusOK)
	var out wire.ACLAuthorizeResults
	r.decode(t, &out)
	if len(out.Checks) != len(checks) {
		t.Fatalf("authorize answered %d results for %d checks: %s", len(out.Checks), len(checks), r.body)
	}
	allowed := make([]bool, len(checks))
	for i, res := range out.Checks {
		if got, want := mustJSON(t, res.ACLCheck), mustJSON(t, checks[i]); got != want {
			t.Fatalf("authorize result %d is for %s, want %s (the checks in order)", i, got, want)
		}
		allowed[i] = res.Allowed
	}
	return allowed
}

// checkName says what a check asks, for messages.
func checkName(c client.ACLCheck) string {
	for _, f := range []struct {
		kind string
		name *string
	}{{"key", c.Key}, {"prefix", c.Prefix}, {"group", c.Group}, {"worker", c.Worker}} {
		if f.name != nil {
			return fmt.Sprintf("%s on %s %q", c.Right, f.kind, *f.name)
		}
	}
	return c.Right
}

// What POST /v1/acl/authorize answers is what the routes do: for tokens of
// different rights (read-only, revoke under a prefix, bound to a holder
// prefix, operator and groups on some names, management), each check is
// allowed exactly when a request of a route that needs it is not refused
// with permission_denied. The answers a user relies on are spelled out
// too: a read-only token may read a key but not revoke it; revoke under
// scenes/ is allowed there and nowhere else (nor by holder, which needs
// every key); a holder binding is not part of a route's guard, so a bound
// token is allowed write where its policy allows it, and its acquires are
// still held to the binding; a management token is allowed everything.
func TestACLAuthorizeIsTheGuard(t *testing.T) {
	e := startACL(t, 1)
	url := e.leader().url
	e.policy(t, "read-only", rule("", client.RightRead))
	e.policy(t, "scenes", rule("scenes/", client.RightRead, client.RightRevoke))
	e.policy(t, "parts", rule("parts/", client.RightRead, client.RightWrite))
	e.policy(t, "ops", rule("", client.RightOperator), rule("partitions", client.RightGroups), rule("w", client.RightGroups))
	secrets := map[string]string{
		"read-only":  e.token(t, client.ACLTokenSpec{Policies: []string{"read-only"}}).SecretID,
		"scenes":     e.token(t, client.ACLTokenSpec{Policies: []string{"scenes"}}).SecretID,
		"bound":      e.token(t, client.ACLTokenSpec{Policies: []string{"parts"}, HolderPrefix: "worker-a"}).SecretID,
		"ops":        e.token(t, client.ACLTokenSpec{Policies: []string{"ops"}}).SecretID,
		"management": e.boot,
	}
	doAs(t, e.boot, "PUT", url+"/v1/leases/scenes/01", `{"holder":"tracker-1","ttl":"30s"}`).wantStatus(t, "acquire scenes/01", http.StatusCreated)

	// Each check with a request of a route whose guard asks the same.
	probes := []struct {
		check              client.ACLCheck
		method, path, body string
	}{
		{client.CheckKey(client.RightRead, "scenes/01"), "GET", "/v1/leases/scenes/01", ""},
		{client.CheckKey(client.RightRevoke, "scenes/01"), "POST", "/v1/revoke/scenes/01", ""},
		{client.CheckKey(client.RightRevoke, "jobs/1"), "POST", "/v1/revoke/jobs/1", ""},
		{client.CheckPrefix(client.RightRevoke, ""), "POST", "/v1/revoke?holder=nobody", ""},
		{client.CheckPrefix(client.RightRead, ""), "GET", "/v1/leases", ""},
		{client.CheckPrefix(client.RightRead, "scenes/"), "GET", "/v1/leases?prefix=scenes/", ""},
		{client.CheckKey(client.RightWrite, "parts/1"), "PUT", "/v1/leases/parts/1", `{"holder":"worker-a#1","ttl":"30s"}`},
		{client.CheckKey(client.RightWrite, "scenes/02"), "PUT", "/v1/leases/scenes/02", `{"holder":"worker-a#1","ttl":"30s"}`},
		{client.CheckGroup(client.RightRead, "partitions"), "GET", "/v1/groups/partitions", ""},
		{client.CheckGroup(client.RightGroups, "partitions"), "DELETE", "/v1/groups/partitions", ""},
		{client.CheckWorker(client.RightGroups, "w1"), "POST", "/v1/workers/w1/drain", `{"draining":false}`},
		{client.CheckKey(client.RightGroups, "scenes/01"), "PATCH", "/v1/controls/scenes/01", `{"disabled":false}`},
		{client.CheckCluster(client.RightOperator), "GET", "/v1/operator/keyring", ""},
		{client.CheckCluster(client.RightACL), "GET", "/v1/acl/policies", ""},
	}
	checks := make([]client.ACLCheck, len(probes))
	for i, p := range probes {
		checks[i] = p.check
	}
	answers := map[string][]bool{}
	for _, who := range []string{"read-only", "scenes", "bound", "ops", "management"} {
		allowed := authorizeAs(t, url, secrets[who], checks)
		answers[who] = allowed
		for i, p := range probes {
			r := doAs(t, secrets[who], p.method, url+p.path, p.body)
			refused := r.status == http.StatusForbidden && r.apiErr(t).Error == wire.CodePermissionDenied
			if allowed[i] == refused {
				t.Errorf("%s: authorize says %s is allowed=%v, but %s %s answered %d %s", who, checkName(p.check), allowed[i], p.method, p.path, r.status, r.body)
			}
		}
	}
	want := []struct {
		who   string
		check client.ACLCheck
		allow bool
	}{
		{"read-only", client.CheckKey(client.RightRead, "scenes/01"), true},
		{"read-only", client.CheckKey(client.RightRevoke, "scenes/01"), false},
		{"read-only", client.CheckPrefix(client.RightRead, ""), true},
		{"scenes", client.CheckKey(client.RightRevoke, "scenes/01"), true},
		{"scenes", client.CheckKey(client.RightRevoke, "jobs/1"), false},
		{"scenes", client.CheckPrefix(client.RightRevoke, ""), false},
		{"scenes", client.CheckPrefix(client.RightRead, ""), false},
		{"bound", client.CheckKey(client.RightWrite, "parts/1"), true},
		{"bound", client.CheckKey(client.RightWrite, "scenes/02"), false},
		{"ops", client.CheckCluster(client.RightOperator), true},
		{"ops", client.CheckCluster(client.RightACL), false},
		{"ops", client.CheckGroup(client.RightGroups, "partitions"), true},
		{"ops", client.CheckWorker(client.RightGroups, "w1"), true},
		{"ops", client.CheckKey(client.RightGroups, "scenes/01"), false},
	}
	for _, w := range want {
		for i, p := range probes {
			if mustJSON(t, p.check) == mustJSON(t, w.check) && answers[w.who][i] != w.allow {
				t.Errorf("%s: %s allowed=%v, want %v", w.who, checkName(w.check), answers[w.who][i], w.allow)
			}
		}
	}
	for i, ok := range answers["management"] {
		if !ok {
			t.Errorf("management: %s denied, want every check allowed", checkName(checks[i]))
		}
	}
	// The binding is checked against the holder a request names, not by
	// the guard: write on parts/ is allowed, acquiring as another holder is
	// not.
	doAs(t, secrets["bound"], "PUT", url+"/v1/leases/parts/2", `{"holder":"worker-b#1","ttl":"30s"}`).wantDenied(t, "bound token acquires as another holder",
		wire.CodePermissionDenied, `"worker-a"`)

	// Any token may ask, about itself only; no token under the deny
	// default policy, or an unknown secret, may not.
	one := mustJSON(t, wire.ACLAuthorizeBody{Checks: []client.ACLCheck{client.CheckKey(client.RightRead, "k")}})
	do(t, "POST", url+"/v1/acl/authorize", one).wantDenied(t, "authorize without a token", wire.CodePermissionDenied, "no token")
	doAs(t, "no-such-secret", "POST", url+"/v1/acl/authorize", one).wantDenied(t, "authorize with an unknown secret", wire.CodeACLNotFound)
}

// With ACLs off every check is allowed, with a token or without one.
func TestACLAuthorizeWithoutACLs(t *testing.T) {
	url := startNode(t).url
	checks := []client.ACLCheck{
		client.CheckKey(client.RightRevoke, "scenes/01"), client.CheckPrefix(client.RightRead, ""),
		client.CheckGroup(client.RightGroups, "partitions"), client.CheckWorker(client.RightGroups, "w1"),
		client.CheckCluster(client.RightOperator), client.CheckCluster(client.RightACL),
	}
	for _, secret := range []string{"", "anything"} {
		for i, ok := range authorizeAs(t, url, secret, checks) {
			if !ok {
				t.Errorf("token %q: %s denied without ACLs, want allowed", secret, checkName(checks[i]))
			}
		}
	}
}

// A body that is not 1 to 100 well-formed checks is refused with 400,
// naming the field and the rule it breaks: a right the API does not know,
// a name missing or given twice, a name given to a cluster right, a name
// that breaks the rule of its kind.
func TestACLAuthorizeBadBodies(t *testing.T) {
	n := (&fakeReplica{}).node()
	many := `{"checks":[` + strings.Repeat(`{"right":"read","key":"k"},`, client.MaxACLChecks) + `{"right":"read","key":"k"}]}`
	for _, tc := range []struct {
		name, body  string
		code, field string
		msg         string // a part of the message
	}{
		{"empty body", ``, wire.CodeInvalidBody, "body", "empty"},
		{"no checks", `{}`, wire.CodeInvalidBody, "checks", "1 to 100"},
		{"zero checks", `{"checks":[]}`, wire.CodeInvalidBody, "checks", "1 to 100"},
		{"too many checks", many, wire.CodeInvalidBody, "checks", "101"},
		{"no right", `{"checks":[{"key":"k"}]}`, wire.CodeInvalidBody, "checks[0].right", "required"},
		{"unknown right", `{"checks":[{"right":"read","key":"k"},{"right":"admin","key":"k"}]}`, wire.CodeInvalidBody, "checks[1].right", `unknown right "admin"`},
		{"two rights in one", `{"checks":[{"right":"read,write","key":"k"}]}`, wire.CodeInvalidBody, "checks[0].right", "unknown right"},
		{"no name", `{"checks":[{"right":"read","key":"k"},{"right":"read","prefix":"p/"},{"right":"revoke"}]}`, wire.CodeInvalidBody, "checks[2]", "one of key, prefix, group or worker"},
		{"two names", `{"checks":[{"right":"groups","key":"k","group":"g"}]}`, wire.CodeInvalidBody, "checks[0].group", "not both key and group"},
		{"a name for a cluster right", `{"checks":[{"right":"operator","key":"k"}]}`, wire.CodeInvalidBody, "checks[0].key", "cluster right"},
		{"an empty prefix for a cluster right", `{"checks":[{"right":"acl","prefix":""}]}`, wire.CodeInvalidBody, "checks[0].prefix", "cluster right"},
		{"a bad key", `{"checks":[{"right":"read","key":"a b"}]}`, wire.CodeInvalidKey, "checks[0].key", "byte 1"},
		{"an empty key", `{"checks":[{"right":"read","key":""}]}`, wire.CodeInvalidKey, "checks[0].key", "empty"},
		{"a long prefix", `{"checks":[{"right":"read","prefix":"` + strings.Repeat("p", 257) + `"}]}`, wire.CodeInvalidPrefix, "checks[0].prefix", "257 bytes"},
		{"a group with a slash", `{"checks":[{"right":"groups","group":"a/b"}]}`, wire.CodeInvalidName, "checks[0].group", "byte 1"},
		{"an empty worker", `{"checks":[{"right":"groups","worker":""}]}`, wire.CodeInvalidWorker, "checks[0].worker", "1 to 256 bytes"},
		{"an answer field", `{"checks":[{"right":"read","key":"k","allowed":true}]}`, wire.CodeInvalidBody, "checks[].allowed", "unknown field"},
		{"a key that is a number", `{"checks":[{"right":"read","key":5}]}`, wire.CodeInvalidKey, "checks.key", "want a JSON string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := callFake(t, n, "POST", "/v1/acl/authorize", tc.body)
			r.wantRefused(t, tc.name, http.StatusBadRequest, tc.code, tc.field, tc.msg)
		})
	}
}
