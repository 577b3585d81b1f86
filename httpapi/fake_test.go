package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
)

// fakeReplica is a node without a cluster behind it, as routing, forwarding,
// status and the ACL check see it (Replica, Status, Tokens): it never
// leads, knows the leader its status names (or none), enforces no ACLs,
// and never changes. A test adds the concerns its requests reach.
type fakeReplica struct{ status cluster.Status }

func (f *fakeReplica) Ready() error           { return cluster.ErrNotLeader }
func (f *fakeReplica) IsLeader() bool         { return f.status.Role == "leader" }
func (f *fakeReplica) ID() string             { return f.status.NodeID }
func (f *fakeReplica) LeaderHTTPAddr() string { return f.status.LeaderHTTPAddr }
func (f *fakeReplica) LeaderHTTP(context.Context) (string, string) {
	return f.status.LeaderID, f.status.LeaderHTTPAddr
}
func (f *fakeReplica) LastContact() time.Duration     { return f.status.LastContact }
func (f *fakeReplica) Health() cluster.NodeHealth     { return f.status.Health }
func (f *fakeReplica) Changed() <-chan struct{}       { return make(chan struct{}) }
func (f *fakeReplica) Status() cluster.Status         { return f.status }
func (f *fakeReplica) StatusChanged() <-chan struct{} { return make(chan struct{}) }
func (f *fakeReplica) Verify(context.Context) error   { return cluster.ErrNotLeader }
func (f *fakeReplica) ResolveToken(string) (*cluster.Authorizer, error) {
	return cluster.AllowAll(), nil
}

// node is the Node of f alone.
func (f *fakeReplica) node() Node { return Node{Replica: f} }

func serveFake(t testing.TB, node Node) http.Handler {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Node = node
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// callFake makes one request of a server of node.
func callFake(t *testing.T, node Node, method, path, body string) reply {
	t.Helper()
	rec := httptest.NewRecorder()
	serveFake(t, node).ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return reply{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// apiRoute is one route of the router.
type apiRoute struct{ method, template string }

// routesOf lists every route of the API's router (every Server has the
// same), sorted, so that a test that covers every route covers a new one.
func routesOf(t testing.TB) []apiRoute {
	t.Helper()
	var out []apiRoute
	err := serveFake(t, (&fakeReplica{}).node()).(*Server).router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err := route.GetPathTemplate()
		if err != nil {
			return err
		}
		methods, err := route.GetMethods()
		if err != nil {
			return fmt.Errorf("route %s has no methods: %w", tpl, err)
		}
		for _, m := range methods {
			out = append(out, apiRoute{m, tpl})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].method+out[i].template < out[j].method+out[j].template
	})
	return out
}

// A node that knows no leader says so on every route that needs one:
// readiness fails with the reason, writes answer no_leader (nothing was
// done: retry), and status says the leader was never heard from.
func TestNodeWithoutLeader(t *testing.T) {
	n := (&fakeReplica{status: cluster.Status{NodeID: "n2", Role: "candidate", Term: 7, LastContact: -1}}).node()

	r := callFake(t, n, http.MethodGet, "/readyz", "")
	r.wantStatus(t, "readyz", http.StatusServiceUnavailable)
	var ready client.Readiness
	r.decode(t, &ready)
	if ready.Ready || ready.Role != "candidate" || ready.Reason != "no known leader" || r.header.Get("Retry-After") == "" {
		t.Errorf("readyz: got %+v with Retry-After %q, want not ready, candidate, no known leader, Retry-After set",
			ready, r.header.Get("Retry-After"))
	}

	r = callFake(t, n, http.MethodPut, "/v1/leases/k", `{"holder":"h","ttl":"10s"}`)
	r.wantStatus(t, "acquire", http.StatusServiceUnavailable)
	if e := r.apiErr(t); e.Error != wire.CodeNoLeader || r.header.Get("Retry-After") == "" {
		t.Errorf("acquire: got code %q with Retry-After %q, want no_leader with Retry-After", e.Error, r.header.Get("Retry-After"))
	}

	r = callFake(t, n, http.MethodGet, "/v1/status", "")
	r.wantStatus(t, "status", http.StatusOK)
	if !strings.Contains(string(r.body), `"last_contact":"never"`) {
		t.Errorf("status: got %s, want last_contact never", r.body)
	}
	var st client.NodeStatus
	r.decode(t, &st)
	if st.LastContact >= 0 || st.Role != "candidate" || st.Term != 7 {
		t.Errorf("status: got %+v, want a candidate of term 7 that never heard a leader", st)
	}
}
