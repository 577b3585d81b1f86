package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
)

// fakeNode is a Node without a cluster behind it: a node that has lost
// its leader, as the API sees it. A method it does not override panics,
// so a test that touches more of the node than it says fails loudly.
type fakeNode struct {
	Node
	status cluster.Status
}

func (f *fakeNode) Status() cluster.Status { return f.status }
func (f *fakeNode) Ready() error           { return cluster.ErrNotLeader }
func (f *fakeNode) LeaderHTTPAddr() string { return f.status.LeaderHTTPAddr }
func (f *fakeNode) LeaderHTTP(context.Context) (string, string) {
	return f.status.LeaderID, f.status.LeaderHTTPAddr
}
func (f *fakeNode) IsLeader() bool { return f.status.Role == "leader" }
func (f *fakeNode) ID() string     { return f.status.NodeID }

// StatusChanged and MembersChanged never fire: the fake does not change.
func (f *fakeNode) StatusChanged() <-chan struct{}  { return make(chan struct{}) }
func (f *fakeNode) MembersChanged() <-chan struct{} { return make(chan struct{}) }

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

func (f *fakeNode) call(t *testing.T, method, path, body string) reply {
	t.Helper()
	rec := httptest.NewRecorder()
	serveFake(t, f).ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return reply{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// A node that knows no leader says so on every route that needs one:
// readiness fails with the reason, writes answer no_leader (nothing was
// done: retry), and status says the leader was never heard from.
func TestNodeWithoutLeader(t *testing.T) {
	f := &fakeNode{status: cluster.Status{NodeID: "n2", Role: "candidate", Term: 7, LastContact: -1}}

	r := f.call(t, http.MethodGet, "/readyz", "")
	r.wantStatus(t, "readyz", http.StatusServiceUnavailable)
	var ready client.Readiness
	r.decode(t, &ready)
	if ready.Ready || ready.Role != "candidate" || ready.Reason != "no known leader" || r.header.Get("Retry-After") == "" {
		t.Errorf("readyz: got %+v with Retry-After %q, want not ready, candidate, no known leader, Retry-After set",
			ready, r.header.Get("Retry-After"))
	}

	r = f.call(t, http.MethodPut, "/v1/leases/k", `{"holder":"h","ttl":"10s"}`)
	r.wantStatus(t, "acquire", http.StatusServiceUnavailable)
	if e := r.apiErr(t); e.Error != wire.CodeNoLeader || r.header.Get("Retry-After") == "" {
		t.Errorf("acquire: got code %q with Retry-After %q, want no_leader with Retry-After", e.Error, r.header.Get("Retry-After"))
	}

	r = f.call(t, http.MethodGet, "/v1/status", "")
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

// ResolveToken: the fake enforces no ACLs.
func (f *fakeNode) ResolveToken(string) (*cluster.Authorizer, error) { return cluster.AllowAll(), nil }
