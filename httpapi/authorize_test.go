package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
)

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
