package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// A gossip member that announces the leader's id with its own HTTP
// address (anyone with the gossip key can) never
// receives a forwarded request, and no answer names it as the leader:
// followers forward only to the address the leader gave over its Raft
// port. Before, followers forwarded to the first alive member announcing
// the leader's id, and the forged member got some of the acquisitions,
// with their tokens.
func TestForgedMemberNeverReceivesForwardedRequests(t *testing.T) {
	logs := &harness.Buffer{}
	c := startClusterWith(t, 3, inproc.Options{TCP: true, Gossip: true, Serve: serveAPI, Tweak: func(cfg *cluster.Config) {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: cfg.NodeID, Output: logs, Level: hclog.Info})
	}})
	leader, follower := c.follower()
	var stolen atomic.Int64
	trap := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"key":"stolen","holder":"h","token":999,"ttl":"30s","state":"held"}`)
	}))
	t.Cleanup(trap.Close)
	trapAddr := trap.Listener.Addr().String()

	meta, err := json.Marshal(cluster.MemberMeta{Role: "server", ID: leader.id, RaftAddr: harness.FreeAddr(t), HTTPAddr: trapAddr, ClusterName: "tenure"})
	if err != nil {
		t.Fatal(err)
	}
	followerIndex := 0
	for i := 0; i < 3; i++ {
		if c.cluster.Peer(i).ID == follower.id {
			followerIndex = i
		}
	}
	inproc.Forge(t, "impostor", meta, c.cluster.GossipAddr(followerIndex))
	harness.WaitUntil(t, 10*time.Second, "the follower to see the impostor", func() bool {
		for _, m := range c.cluster.Node(followerIndex).Members() {
			if m.Name == "impostor" && m.Status == "alive" {
				return true
			}
		}
		return false
	})
	for i := 0; i < 16; i++ {
		r := do(t, http.MethodPut, follower.url+"/v1/leases/forged/"+strconv.Itoa(i), `{"holder":"h1","ttl":"30s"}`)
		r.wantStatus(t, "acquire through a follower", http.StatusCreated)
		if got := r.header.Get("X-Tenure-Leader-Addr"); got != leader.addr {
			t.Errorf("acquire %d: X-Tenure-Leader-Addr %q, want the leader's %q", i, got, leader.addr)
		}
	}
	if n := stolen.Load(); n != 0 {
		t.Fatalf("the forged member received %d of 16 forwarded acquisitions", n)
	}
	if got := c.cluster.Node(followerIndex).Status().LeaderHTTPAddr; got != leader.addr {
		t.Errorf("status names leader address %q, want %q", got, leader.addr)
	}
	want := fmt.Sprintf("several gossip members announce one server id: none of them is trusted: server_ids=\"%s (2 members)\"", leader.id)
	harness.WaitUntil(t, 5*time.Second, "the servers to log the shared id", func() bool { return strings.Contains(logs.String(), want) })
}
