package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client/wire"
)

// A leadership transfer that Raft gives up on (here: to a stopped server,
// which the leader cannot bring up to date) answers 504 timeout saying the
// outcome is unknown, as any wait for Raft that ends without an answer
// does; not 500 internal, which says "a bug" and gives a client nothing to
// act on.
func TestTransferLeaderTimeoutIsTimeout(t *testing.T) {
	c := startCluster(t, 3)
	leader := c.leader()
	target := -1
	for i, tn := range c.nodes {
		if tn != leader {
			target = i
			break
		}
	}
	c.cluster.Stop(target)
	// An entry the stopped server lacks: the transfer first waits for it
	// to catch up, which it never does.
	acquire(t, leader, "transfer/k", "h1")

	r := do(t, http.MethodPost, leader.url+"/v1/operator/transfer-leader", `{"id":"`+c.nodes[target].id+`"}`)
	e := r.apiErr(t)
	if r.status != http.StatusGatewayTimeout || e.Error != wire.CodeTimeout {
		t.Fatalf("transfer to a stopped server: got %d %q (%s), want 504 %q", r.status, e.Error, e.Message, wire.CodeTimeout)
	}
	if !strings.Contains(e.Message, "outcome unknown") {
		t.Errorf("message %q does not say that the outcome is unknown", e.Message)
	}
}
