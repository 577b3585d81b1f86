package cluster

import (
	"testing"

	"github.com/tenure-io/tenure/cluster/internal/transport"
)

// TestServerIPOfANamedRaftAddress: a server whose Raft address is a host
// name is recognised by the IPs the name resolves to.
func TestServerIPOfANamedRaftAddress(t *testing.T) {
	n := &Node{cfg: Config{InitialCluster: []Peer{{ID: "n1", RaftAddr: "localhost:7501"}, {ID: "n2", RaftAddr: "10.1.2.3:7501"}}}}
	for ip, want := range map[string]bool{"127.0.0.1": true, "10.1.2.3": true, "192.0.2.1": false} {
		if got := n.IsServerIP(ip); got != want {
			t.Errorf("IsServerIP(%s) = %v, want %v", ip, got, want)
		}
	}
	if addr := transport.NamedAddr("tenure-0.tenure:7501"); addr.String() != "tenure-0.tenure:7501" || addr.Network() != "tcp" {
		t.Errorf("NamedAddr = %s/%s, want tcp/tenure-0.tenure:7501", addr.Network(), addr.String())
	}
}
