package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/test/harness"
)

// TestFailedForwardNeverShowsTheQuery: a release may carry its lease
// secret in the query (?secret=). When a follower cannot reach the leader,
// its answer (503 leadership_lost) and its debug log name the leader and
// the path, never the query and so never the secret.
func TestFailedForwardNeverShowsTheQuery(t *testing.T) {
	const secret = "5ec2e75ec2e75ec2e75ec2e75ec2e7aa"
	_, n := newMovingLeader(harness.FreeAddr(t)) // nothing listens: the forward fails
	var logs harness.Buffer
	cfg := DefaultConfig()
	cfg.Node = n
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(s)
	t.Cleanup(front.Close)

	r := do(t, http.MethodDelete, front.URL+"/v1/leases/k/a?holder=h&token=1&secret="+secret, "")
	r.wantStatus(t, "a release through a follower that cannot reach the leader", http.StatusServiceUnavailable)
	if e := r.apiErr(t); e.Error != wire.CodeLeadershipLost || !strings.Contains(e.Message, "/v1/leases/k/a") {
		t.Errorf("answered %q %q, want %s naming the path", e.Error, e.Message, wire.CodeLeadershipLost)
	}
	if strings.Contains(string(r.body), secret) {
		t.Errorf("the answer shows the lease secret: %s", r.body)
	}
	if !strings.Contains(logs.String(), "forward failed") {
		t.Fatalf("no debug line for the failed forward in:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the log shows the lease secret:\n%s", logs.String())
	}
}
