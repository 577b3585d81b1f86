package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// A forced removal whose configuration change cannot commit, because the
// leader is cut off from every other server and steps down, answers 503
// leadership_lost with Retry-After: whether the server is still in the
// configuration is unknown. Before, the bare Raft error answered 500
// internal.
func TestForcedRemovalLosingLeadership(t *testing.T) {
	c := startClusterWith(t, 3, inproc.Options{Serve: serveAPI, Tweak: func(cfg *cluster.Config) {
		// A leader that takes a second to notice it lost its quorum,
		// so that the removal is proposed before it steps down.
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = time.Second, time.Second, time.Second
		cfg.MinTTL = 2 * time.Second
	}})
	leader := c.leader()
	var li, victim int
	for i, tn := range c.nodes {
		if tn == leader {
			li = i
		}
	}
	victim = (li + 1) % 3
	c.cluster.Stop(victim)
	c.cluster.Isolate(li)

	r := do(t, http.MethodDelete, leader.url+"/v1/operator/servers/"+c.nodes[victim].id+"?force=true", "")
	e := r.apiErr(t)
	if r.status == http.StatusServiceUnavailable && e.Error == wire.CodeNoLeader {
		t.Skipf("the leader stepped down before the removal reached Raft (%s); nothing to check", e.Message)
	}
	if r.status != http.StatusServiceUnavailable || e.Error != wire.CodeLeadershipLost {
		t.Fatalf("forced removal that loses leadership: got %d %q (%s), want 503 %q", r.status, e.Error, e.Message, wire.CodeLeadershipLost)
	}
	if r.header.Get("Retry-After") == "" {
		t.Errorf("503 leadership_lost without Retry-After")
	}
}
