package httpapi

import (
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/test/harness"
)

// With ACLs on, any valid token (here one that may only write under a
// prefix) reads the cluster id in /v1/status, and every node reports the
// same one.
func TestStatusClusterIDWithACLs(t *testing.T) {
	e := startACL(t, 3)
	e.policy(t, "scenes", rule("scenes/", client.RightWrite))
	tok := e.token(t, client.ACLTokenSpec{Policies: []string{"scenes"}})
	var first string
	harness.WaitUntil(t, 10*time.Second, "every node to report the cluster id", func() bool {
		first = ""
		for _, n := range e.nodes {
			var st client.NodeStatus
			r := doAs(t, tok.SecretID, "GET", n.url+"/v1/status", "")
			if r.status != 200 { // the token may not have reached a follower yet
				return false
			}
			r.decode(t, &st)
			if st.ClusterID == "" || (first != "" && st.ClusterID != first) {
				return false
			}
			first = st.ClusterID
		}
		return true
	})
}
