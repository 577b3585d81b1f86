package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// TestReviewConflictAnswersShowALeaseToATokenWithoutRead: a token with
// write on a prefix and no read (a worker that only acquires) learns
// another holder's name, token and metadata from the 409 answers of an
// acquire of a held key and of a release under another holder's name,
// which a GET with the same token is refused.
func TestReviewConflictAnswersShowALeaseToATokenWithoutRead(t *testing.T) {
	t.Skip("finding: 409 held and not_holder answers carry the lease to a token without read (httpapi/errors.go errorBody)")
	e := startACL(t, 1)
	url := e.leader().url
	e.policy(t, "victim", rule("parts/", client.RightRead, client.RightWrite))
	e.policy(t, "writeonly", rule("parts/", client.RightWrite))
	victim := e.token(t, client.ACLTokenSpec{Policies: []string{"victim"}}).SecretID
	attacker := e.token(t, client.ACLTokenSpec{Policies: []string{"writeonly"}}).SecretID
	const secret = "v1c71m5ec2e7v1c71m5ec2e7v1c71m5e"
	const mine = "a77ac3e2a77ac3e2a77ac3e2a77ac3e2"
	r := rawAs(t, victim, "PUT", url+"/v1/leases/parts/1", `{"holder":"worker-1","ttl":"30s","metadata":{"addr":"10.0.0.1:80"},"secret":"`+secret+`"}`)
	r.wantStatus(t, "victim acquires", http.StatusCreated)
	tok := r.lease(t).Token

	r = rawAs(t, attacker, "GET", url+"/v1/leases/parts/1", "")
	r.wantStatus(t, "attacker reads", http.StatusForbidden)

	var leaks []string
	for _, a := range []struct{ what, method, path, body string }{
		{"acquire of the held key", "PUT", "/v1/leases/parts/1", `{"holder":"me","ttl":"30s","secret":"` + mine + `"}`},
		{"release under another name", "DELETE", "/v1/leases/parts/1", fmt.Sprintf(`{"holder":"me","token":%d,"secret":"%s"}`, tok, mine)},
		{"release with a guessed token", "DELETE", "/v1/leases/parts/1", fmt.Sprintf(`{"holder":"me","token":%d,"secret":"%s"}`, tok+100, mine)},
	} {
		r := rawAs(t, attacker, a.method, url+a.path, a.body)
		if strings.Contains(string(r.body), "worker-1") || strings.Contains(string(r.body), "10.0.0.1:80") {
			leaks = append(leaks, fmt.Sprintf("%s: %d %s", a.what, r.status, strings.TrimSpace(string(r.body))))
		}
	}
	if len(leaks) > 0 {
		t.Errorf("a token without read on parts/ learned the lease:\n%s", strings.Join(leaks, "\n"))
	}
}

// reviewMember is a gossip member announcing the metadata it is given.
type reviewMember struct{ meta []byte }

func (f *reviewMember) NodeMeta(limit int) []byte                  { return f.meta }
func (f *reviewMember) NotifyMsg([]byte)                           {}
func (f *reviewMember) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (f *reviewMember) LocalState(join bool) []byte                { return nil }
func (f *reviewMember) MergeRemoteState(buf []byte, join bool)     {}

// TestReviewMembersShowEveryWorkerToAnyToken: GET /v1/members needs any
// valid token and answers every gossip member's metadata: a worker's id,
// the holder name of its leases and the groups it serves. A token with
// read on mine/ only is refused GET /v1/workers (read on every name),
// and the group and assignment answers hide the keys of other/ from it,
// yet it learns from the members list that worker w-other holds leases
// of group other as holder other-holder-1.
func TestReviewMembersShowEveryWorkerToAnyToken(t *testing.T) {
	t.Skip("finding: GET /v1/members answers every worker's holder and groups to any token (httpapi/cluster.go members)")
	c := startClusterWith(t, 1, inproc.Options{Gossip: true, Serve: serveAPI, Tweak: func(cfg *cluster.Config) {
		cfg.ACLEnabled = true
	}})
	r := do(t, "POST", c.leader().url+"/v1/acl/bootstrap", "")
	r.wantStatus(t, "bootstrap", 200)
	var boot client.ACLToken
	r.decode(t, &boot)
	e := &aclEnv{testCluster: c, boot: boot.SecretID}
	url := e.leader().url
	e.policy(t, "mine", rule("mine/", client.RightRead, client.RightWrite))
	mine := e.token(t, client.ACLTokenSpec{Policies: []string{"mine"}}).SecretID

	meta, _ := json.Marshal(map[string]any{"role": "worker", "id": "w-other", "holder": "other-holder-1", "groups": []string{"other"}, "capacity": 1})
	addr := harness.FreeAddr(t)
	host, port, _ := net.SplitHostPort(addr)
	mc := memberlist.DefaultLANConfig()
	mc.Name = "w-other"
	mc.BindAddr, mc.AdvertiseAddr = host, host
	mc.BindPort, _ = strconv.Atoi(port)
	mc.AdvertisePort = mc.BindPort
	mc.Delegate = &reviewMember{meta: meta}
	mc.LogOutput = io.Discard
	ml, err := memberlist.Create(mc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ml.Shutdown() })
	if _, err := ml.Join([]string{c.cluster.GossipAddr(0)}); err != nil {
		t.Fatal(err)
	}

	rawAs(t, mine, "GET", url+"/v1/workers", "").wantStatus(t, "workers list with read on mine/", http.StatusForbidden)
	harness.WaitUntil(t, 10*time.Second, "the server to see w-other", func() bool {
		return strings.Contains(string(rawAs(t, boot.SecretID, "GET", url+"/v1/members", "").body), "w-other")
	})
	r = rawAs(t, mine, "GET", url+"/v1/members", "")
	if r.status == http.StatusOK && strings.Contains(string(r.body), "other-holder-1") {
		t.Errorf("a token with read on mine/ only learned another worker's holder and groups: %s", strings.TrimSpace(string(r.body)))
	}
}
