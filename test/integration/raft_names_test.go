package integration

import (
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestRaftAddressesAsNamesWithTLS: servers that announce their Raft
// address as a host name (-raft-advertise), with mutual TLS on, bootstrap
// with the names in the Raft configuration, elect a leader, replicate, and
// a restarted follower is reached under its name again.
func TestRaftAddressesAsNamesWithTLS(t *testing.T) {
	c, p, _ := newMutualTLSCluster(t, "harness")
	tlsArgs := p.serverArgs()
	named := func(nd *node) string {
		_, port, err := net.SplitHostPort(nd.raftAddr)
		if err != nil {
			t.Fatal(err)
		}
		return net.JoinHostPort("localhost", port)
	}
	c.nodeArgs = func(t *testing.T, nd *node) []string {
		return append(tlsArgs(t, nd), "-raft-advertise", named(nd))
	}
	c.boot(t, 3)
	l := c.leader(t)
	st := c.mustStatus(t, l)
	if len(st.Servers) != 3 {
		t.Fatalf("configuration %+v, want 3 servers", st.Servers)
	}
	for _, srv := range st.Servers {
		for _, nd := range c.nodes {
			if nd.id == srv.ID && srv.RaftAddr != named(nd) {
				t.Errorf("%s is in the configuration at %s, want its name %s", srv.ID, srv.RaftAddr, named(nd))
			}
		}
	}
	c.acquire(t, l, "named/a", "w", "30s", http.StatusCreated)
	f := c.followers(l)[0]
	c.stop(t, f)
	c.acquire(t, c.leader(t), "named/b", "w", "30s", http.StatusCreated)
	c.restart(t, f)
	poll.WaitFor(t, 20*time.Second, func() error {
		r := c.callOnce(t, f, http.MethodGet, "/v1/leases/named/b?stale=true", nil)
		if r.Status != http.StatusOK {
			return fmt.Errorf("restarted %s: named/b %v", c.nodes[f].id, r)
		}
		return nil
	})
}
