package httpapi

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/fsm"
)

// The server answers with exactly the error codes that package client
// declares: a code on one side only fails here.
func TestErrorCodesAreTheClients(t *testing.T) {
	var server []string
	for code := range codeStatus {
		server = append(server, code)
	}
	sort.Strings(server)
	if got, want := strings.Join(server, " "), strings.Join(wire.ErrorCodes(), " "); got != want {
		t.Errorf("codes the server answers with:\n  %s\nclient.ErrorCodes():\n  %s", got, want)
	}
	for field, code := range fieldCodes {
		if _, ok := codeStatus[code]; !ok {
			t.Errorf("field %q maps to code %q, which has no status", field, code)
		}
	}
}

// Every route answers in the client's types: each JSON answer decodes into
// the type the client reads it with, and encodes back to the same JSON, so
// a field the server writes and the client drops (or the reverse) fails. A
// route added without an entry here fails too.
func TestEveryRouteAnswersInClientTypes(t *testing.T) {
	c := startCluster(t, 3)
	l := c.leader()
	type call struct {
		route       string // the router's "METHOD template"
		method, url string
		body        string
		status      int
		into        func() any // nil: no JSON answer to check
	}
	lease := func() any { return new(client.LeaseInfo) }
	errBody := func() any { return new(wire.ErrorBody) }
	calls := []call{
		{"PUT /v1/leases/{key:.+}", "PUT", "/v1/leases/c/a", `{"holder":"h1","ttl":"30s","metadata":{"zone":"a"}}`, 201, lease},
		{"PUT /v1/leases/{key:.+}", "PUT", "/v1/leases/c/a", `{"holder":"h2","ttl":"30s"}`, 409, errBody},
		{"GET /v1/leases/{key:.+}", "GET", "/v1/leases/c/a", "", 200, lease},
		{"GET /v1/leases/{key:.+}", "GET", "/v1/leases/c/never", "", 404, errBody},
		{"GET /v1/leases", "GET", "/v1/leases?prefix=c/", "", 200, func() any { return new(wire.LeaseList) }},
		{"POST /v1/renew/{key:.+}", "POST", "/v1/renew/c/a", `{"holder":"h1","token":1}`, 200, lease},
		{"POST /v1/renew/{key:.+}", "POST", "/v1/renew/c/a", `{"holder":"h1","token":99}`, 404, errBody},
		{"POST /v1/renew", "POST", "/v1/renew", `{"holder":"h1","leases":[{"key":"c/a","token":1},{"key":"c/a","token":99}]}`, 200,
			func() any { return new(wire.RenewManyResults) }},
		{"PUT /v1/leases/{key:.+}", "PUT", "/v1/leases/c/b", `{"holder":"h1","ttl":"bad"}`, 400, errBody},
		{"DELETE /v1/leases/{key:.+}", "DELETE", "/v1/leases/c/a?holder=h2&token=1", "", 409, errBody},
		{"DELETE /v1/leases/{key:.+}", "DELETE", "/v1/leases/c/a?holder=h1&token=1", "", 204, nil},
		{"PUT /v1/leases/{key:.+}", "PUT", "/v1/leases/c/r", `{"holder":"h3","ttl":"30s"}`, 201, lease},
		{"POST /v1/revoke/{key:.+}", "POST", "/v1/revoke/c/a", "", 200, func() any { return new(client.RevokeResult) }},
		{"POST /v1/revoke/{key:.+}", "POST", "/v1/revoke/c/r", "", 200, func() any { return new(client.RevokeResult) }},
		{"POST /v1/revoke/{key:.+}", "POST", "/v1/revoke/c/r?force=true", "", 200, func() any { return new(client.RevokeResult) }},
		{"PUT /v1/leases/{key:.+}", "PUT", "/v1/leases/c/s", `{"holder":"h3","ttl":"30s"}`, 201, lease},
		{"POST /v1/revoke", "POST", "/v1/revoke?holder=h3", "", 200, func() any { return new(client.RevokeResult) }},
		{"POST /v1/revoke", "POST", "/v1/revoke", "", 400, errBody},
		{"PUT /v1/groups/{name:.+?}", "PUT", "/v1/groups/g", `{"prefix":"g-","count":4,"max_per_worker":3,"stuck_grace":"30s","min_workers":1}`, 200, func() any { return new(client.GroupSummary) }},
		{"PUT /v1/groups/{name:.+?}", "PUT", "/v1/groups/g", `{"prefix":"g-","count":5}`, 409, errBody},
		{"GET /v1/leases", "GET", "/v1/leases?state=free&prefix=g-", "", 200, func() any { return new(wire.LeaseList) }},
		{"POST /v1/groups/{name:.+?}/keys", "POST", "/v1/groups/g/keys", `{"add":["g-9"],"remove":["g-0"]}`, 200, func() any { return new(client.GroupSummary) }},
		{"PUT /v1/groups/{name:.+?}/keys", "PUT", "/v1/groups/g/keys", `{"keys":["g-0","g-1","g-2","g-3"]}`, 200, func() any { return new(client.GroupSummary) }},
		{"PUT /v1/groups/{name:.+?}/max-per-worker", "PUT", "/v1/groups/g/max-per-worker", `{"max_per_worker":2}`, 200, func() any { return new(client.GroupSummary) }},
		{"PUT /v1/groups/{name:.+?}/balance", "PUT", "/v1/groups/g/balance", `{"by":"load","move_budget":4}`, 200, func() any { return new(client.GroupBalance) }},
		{"PUT /v1/groups/{name:.+?}/balance", "PUT", "/v1/groups/g/balance", `{"by":"weight"}`, 400, errBody},
		{"POST /v1/groups/{name:.+?}/prepared", "POST", "/v1/groups/g/prepared", `{"worker":"w1","keys":["g-1"]}`, 200, func() any { return new(client.PreparedBody) }},
		{"POST /v1/groups/{name:.+?}/prepared", "POST", "/v1/groups/g/prepared", `{"worker":"w1","keys":[]}`, 400, errBody},
		{"GET /v1/groups", "GET", "/v1/groups", "", 200, func() any { return new(wire.GroupList) }},
		{"GET /v1/groups/{name:.+?}", "GET", "/v1/groups/g", "", 200, func() any { return new(client.Group) }},
		{"GET /v1/groups/{name:.+?}/assignment", "GET", "/v1/groups/g/assignment", "", 200, func() any { return new(client.Assignment) }},
		{"PUT /v1/controls/{key:.+}", "PUT", "/v1/controls/g-1", `{"disabled":true,"prohibited":["w9"]}`, 200, func() any { return new(client.KeyControl) }},
		{"PATCH /v1/controls/{key:.+}", "PATCH", "/v1/controls/g-1", `{"disabled":false,"prohibit":["w8"],"allow":["w9"]}`, 200, func() any { return new(client.KeyControl) }},
		{"PUT /v1/leases/{key:.+}", "PUT", "/v1/leases/c/t", `{"holder":"h4","ttl":"30s"}`, 201, lease},
		{"PUT /v1/controls/{key:.+}", "PUT", "/v1/controls/c/t", `{"disabled":false,"prohibited":["h4"]}`, 200, func() any { return new(client.KeyControl) }},
		{"PUT /v1/controls/{key:.+}", "PUT", "/v1/controls/c/t?force=true", `{"disabled":true,"prohibited":[]}`, 200, func() any { return new(client.KeyControl) }},
		{"GET /v1/controls/{key:.+}", "GET", "/v1/controls/g-1", "", 200, func() any { return new(client.KeyControl) }},
		{"PUT /v1/controls/{key:.+}", "PUT", "/v1/controls/never-seen", `{"disabled":true}`, 404, errBody},
		{"POST /v1/workers/{id}/drain", "POST", "/v1/workers/w1/drain", `{"draining":true}`, 404, errBody},
		{"POST /v1/workers/{id}/drain", "POST", "/v1/workers/w1/drain?force=true", `{"draining":true}`, 200, func() any { return new(client.DrainResult) }},
		{"GET /v1/workers", "GET", "/v1/workers", "", 200, func() any { return new(wire.WorkerList) }},
		{"POST /v1/workers/{id}/drain", "POST", "/v1/workers/w1/drain", `{"draining":false}`, 200, func() any { return new(client.DrainResult) }},
		{"DELETE /v1/groups/{name:.+?}", "DELETE", "/v1/groups/g", "", 204, nil},
		{"GET /v1/health/placement", "GET", "/v1/health/placement?threshold=1m", "", 200, func() any { return new(client.PlacementHealth) }},
		{"GET /v1/health/placement", "GET", "/v1/health/placement?threshold=soon", "", 400, errBody},
		{"PUT /v1/groups/{name:.+?}", "PUT", "/v1/groups/g3", `{"keys":["x"],"stuck_grace":"1ms"}`, 400, errBody},
		{"PUT /v1/groups/{name:.+?}", "PUT", "/v1/groups/g3", `{"keys":["x"],"min_workers":-1}`, 400, errBody},
		{"GET /v1/events", "GET", "/v1/events?index=0&wait=1s", "", 200, func() any { return new(wire.EventList) }},
		{"GET /v1/events", "GET", "/v1/events?type=control_changed", "", 200, func() any { return new(wire.EventList) }},
		{"GET /v1/events", "GET", "/v1/events?type=bogus", "", 400, errBody},
		{"GET /v1/status", "GET", "/v1/status", "", 200, func() any { return new(client.NodeStatus) }},
		{"POST /v1/acl/authorize", "POST", "/v1/acl/authorize", `{"checks":[{"right":"revoke","key":"c/a"},{"right":"read","prefix":""},{"right":"operator"}]}`, 200,
			func() any { return new(wire.ACLAuthorizeResults) }},
		{"GET /v1/members", "GET", "/v1/members", "", 200, func() any { return new(wire.MemberList) }},
		{"GET /healthz", "GET", "/healthz", "", 200, func() any { return new(client.Health) }},
		{"GET /readyz", "GET", "/readyz", "", 200, func() any { return new(client.Readiness) }},
		{"GET /metrics", "GET", "/metrics", "", 200, nil},
		{"GET /v1/debug/pprof/{profile}", "GET", "/v1/debug/pprof/goroutine", "", 200, nil},
		{"GET /v1/debug/pprof/{profile}", "GET", "/v1/debug/pprof/heap?debug=1", "", 200, nil},
		{"GET /v1/debug/pprof/{profile}", "GET", "/v1/debug/pprof/profile", "", 404, errBody},
		{"GET /v1/debug/pprof/{profile}", "GET", "/v1/debug/pprof/goroutine?debug=x", "", 400, errBody},
		{"GET /v1/debug/logs", "GET", "/v1/debug/logs", "", 200, nil},
		{"GET /ui", "GET", "/ui", "", 200, nil},
		{"GET /ui/static/{file}", "GET", "/ui/static/page.css", "", 200, nil},
		{"GET /ui/static/{file}", "GET", "/ui/static/nothing.js", "", 404, errBody},
		{"GET /", "GET", "/", "", 302, nil},
		{"GET /v1/openapi.yaml", "GET", "/v1/openapi.yaml", "", 200, nil}, // YAML, checked by TestOpenAPIDescribesRealAnswers
		{"GET /v1/stream", "GET", "/v1/stream", "", 400, errBody},         // without Upgrade; its frames: TestRequestStreamFrameRules
		{"POST /v1/operator/snapshot", "POST", "/v1/operator/snapshot", "", 200, func() any { return new(client.SnapshotInfo) }},
		{"GET /v1/snapshot", "GET", "/v1/snapshot", "", 200, nil},
		{"PUT /v1/snapshot", "PUT", "/v1/snapshot", "not a snapshot", 400, errBody},
		{"PUT /v1/snapshot", "PUT", "/v1/snapshot?token-floor=x", "", 400, errBody},
		{"DELETE /v1/operator/servers/{id}", "DELETE", "/v1/operator/servers/n9", "", 404, errBody},
		{"DELETE /v1/operator/servers/{id}", "DELETE", "/v1/operator/servers/n1", "", 409, errBody},
		{"POST /v1/operator/servers/{id}/readmit", "POST", "/v1/operator/servers/n1/readmit", "", 200, func() any { return new(client.ReadmitResult) }},
		{"POST /v1/operator/servers/{id}/readmit", "POST", "/v1/operator/servers/n9/readmit", "", 404, errBody},
		{"GET /v1/operator/keyring", "GET", "/v1/operator/keyring", "", 409, errBody},
		{"POST /v1/operator/keyring", "POST", "/v1/operator/keyring", `{"op":"install","gossip_key":"AAAA"}`, 409, errBody},
		{"POST /v1/operator/servers/{id}/promote", "POST", "/v1/operator/servers/n1/promote", "", 200, func() any { return new(client.PromoteResult) }},
		{"POST /v1/operator/servers/{id}/promote", "POST", "/v1/operator/servers/n9/promote", "", 404, errBody},
		{"POST /v1/operator/transfer-leader", "POST", "/v1/operator/transfer-leader", `{}`, 200, func() any { return new(wire.TransferResult) }},
	}
	token := func() any { return new(client.ACLToken) }
	policy := func() any { return new(client.ACLPolicy) }
	// The ACL routes, on a cluster with ACLs on, as its bootstrap token
	// (the first call, which needs none).
	aclCalls := []call{
		{"POST /v1/acl/bootstrap", "POST", "/v1/acl/bootstrap", "", 200, token},
		{"POST /v1/acl/bootstrap", "POST", "/v1/acl/bootstrap", "", 403, errBody},
		{"PUT /v1/acl/policy/{name}", "PUT", "/v1/acl/policy/scenes", `{"description":"d","rules":[{"prefix":"scenes/","rights":["read","write"]},{"prefix":"","rights":["operator"]}]}`, 200, policy},
		{"PUT /v1/acl/policy/{name}", "PUT", "/v1/acl/policy/bad", `{"rules":[{"prefix":"a","rights":["admin"]}]}`, 400, errBody},
		{"GET /v1/acl/policy/{name}", "GET", "/v1/acl/policy/scenes", "", 200, policy},
		{"GET /v1/acl/policies", "GET", "/v1/acl/policies", "", 200, func() any { return new(client.ACLPolicyList) }},
		{"PUT /v1/acl/token", "PUT", "/v1/acl/token", `{"description":"trackers","policies":["scenes"],"holder_prefix":"tracker-"}`, 200, token},
		{"PUT /v1/acl/token", "PUT", "/v1/acl/token", `{"policies":["missing"]}`, 400, errBody},
		{"GET /v1/acl/tokens", "GET", "/v1/acl/tokens", "", 200, func() any { return new(client.ACLTokenList) }},
		{"GET /v1/acl/token/self", "GET", "/v1/acl/token/self", "", 200, token},
		{"POST /v1/acl/authorize", "POST", "/v1/acl/authorize", `{"checks":[{"right":"revoke","key":"scenes/01"},{"right":"groups","group":"g"},{"right":"groups","worker":"w1"},{"right":"write","prefix":"p/"},{"right":"acl"}]}`, 200,
			func() any { return new(wire.ACLAuthorizeResults) }},
		{"POST /v1/acl/authorize", "POST", "/v1/acl/authorize", `{"checks":[{"right":"revoke"}]}`, 400, errBody},
		{"GET /v1/acl/token/{accessor}", "GET", "/v1/acl/token/nope", "", 404, errBody},
		{"DELETE /v1/acl/token/{accessor}", "DELETE", "/v1/acl/token/nope", "", 404, errBody},
		{"POST /v1/workers/{id}/register", "POST", "/v1/workers/w1/register", `{"groups":["g"]}`, 204, nil},
		{"DELETE /v1/acl/policy/{name}", "DELETE", "/v1/acl/policy/scenes", "", 204, nil},
	}
	covered := map[string]bool{}
	for _, cl := range calls {
		covered[cl.route] = true
		r := do(t, cl.method, l.url+cl.url, cl.body)
		r.wantStatus(t, cl.method+" "+cl.url, cl.status)
		if cl.into != nil {
			sameJSON(t, cl.method+" "+cl.url, r.body, cl.into())
		}
	}
	al := startACLCluster(t, 1).leader()
	var secret string
	for _, cl := range aclCalls {
		covered[cl.route] = true
		r := doAs(t, secret, cl.method, al.url+cl.url, cl.body)
		r.wantStatus(t, cl.method+" "+cl.url, cl.status)
		if cl.into != nil {
			sameJSON(t, cl.method+" "+cl.url, r.body, cl.into())
		}
		if secret == "" {
			var boot client.ACLToken
			r.decode(t, &boot)
			secret = boot.SecretID
		}
	}
	// The token and policy routes of a server without ACLs say so.
	r := do(t, "GET", l.url+"/v1/acl/tokens", "")
	if r.wantStatus(t, "GET /v1/acl/tokens without ACLs", 400); r.apiErr(t).Error != wire.CodeACLDisabled {
		t.Errorf("GET /v1/acl/tokens without ACLs: %s, want %s", r.body, wire.CodeACLDisabled)
	}
	for _, rt := range routesOf(t) {
		if !covered[rt.method+" "+rt.template] {
			t.Errorf("route %s %s has no entry in this test: say which client type reads its answer", rt.method, rt.template)
		}
	}
}

// sameJSON decodes body into v, encodes v again and fails unless the two
// JSON documents are equal.
func sameJSON(t *testing.T, what string, body []byte, v any) {
	t.Helper()
	var want, got any
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatalf("%s: answer is not JSON: %v: %s", what, err, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("%s: decode into %T: %v: %s", what, v, err, body)
	}
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: encode %T: %v", what, v, err)
	}
	if err := json.Unmarshal(again, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%s: the server's JSON and %T disagree:\nserver: %s\nclient: %s", what, v, body, again)
	}
}

// The event types the state machine records are the ones the client names
// (client.EventTypes), in the same order.
func TestEventTypesAreTheClients(t *testing.T) {
	var got []string
	for e := fsm.EventType(1); !strings.HasPrefix(e.String(), "event("); e++ {
		got = append(got, e.String())
	}
	if want := client.EventTypes(); !slices.Equal(got, want) {
		t.Errorf("fsm records %q, the client names %q", got, want)
	}
}
