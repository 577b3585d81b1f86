package httpapi

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/test/harness"
)

// wantReadHeaders fails unless r carries the headers of a read: the index
// (want, when not 0) and how stale the answering node may be.
func (r reply) wantReadHeaders(t *testing.T, what string, want uint64) {
	t.Helper()
	for _, h := range []string{client.HeaderIndex, client.HeaderLastContact, client.HeaderKnownLeader, client.HeaderAppliedIndex, client.HeaderBehind} {
		if r.header.Get(h) == "" {
			t.Errorf("%s: no %s header", what, h)
		}
	}
	got, err := strconv.ParseUint(r.header.Get(client.HeaderIndex), 10, 64)
	switch {
	case err != nil || got == 0:
		t.Errorf("%s: %s %q, want a positive index", what, client.HeaderIndex, r.header.Get(client.HeaderIndex))
	case want != 0 && got != want:
		t.Errorf("%s: %s %d, want %d", what, client.HeaderIndex, got, want)
	}
}

// A key's controls are read like any other state: linearizable or stale
// (on a follower), each answer says its index and how stale it may be, and
// the index blocks a read until the controls change.
func TestControlReadHeaders(t *testing.T) {
	c := startCluster(t, 3)
	leader, follower := c.follower()
	do(t, http.MethodPut, leader.url+"/v1/controls/ctl/k?force=true", `{"disabled":true}`).wantStatus(t, "disable", 200)
	r := do(t, http.MethodGet, leader.url+"/v1/controls/ctl/k", "")
	r.wantStatus(t, "read", 200)
	r.wantReadHeaders(t, "linearizable read", 0)
	index := r.index(t)
	for _, tn := range []*testNode{leader, follower} {
		r := do(t, http.MethodGet, tn.url+"/v1/controls/ctl/k?stale", "")
		r.wantStatus(t, "stale read on "+tn.id, 200)
		r.wantReadHeaders(t, "stale read on "+tn.id, 0)
	}

	ch := sendAsync(http.MethodGet, leader.url+"/v1/controls/ctl/k?index="+strconv.FormatUint(index, 10)+"&wait=20s")
	quiet(t, ch, 200*time.Millisecond, "a blocking read of unchanged controls")
	do(t, http.MethodPatch, leader.url+"/v1/controls/ctl/k", `{"prohibit":["h9"]}`).wantStatus(t, "prohibit", 200)
	r = receive(t, ch, 10*time.Second)
	r.wantStatus(t, "blocking read", 200)
	var ctl client.KeyControl
	r.decode(t, &ctl)
	if len(ctl.Prohibited) != 1 || ctl.Prohibited[0] != "h9" || r.index(t) <= index {
		t.Errorf("blocking read: %+v at index %d, want h9 prohibited at an index above %d", ctl, r.index(t), index)
	}
}

// The ACL reads say their index and staleness as the other reads do: a
// token's index is its create_index, a policy's its modify_index.
func TestACLReadHeaders(t *testing.T) {
	e := startACL(t, 3)
	leader, follower := e.follower()
	e.policy(t, "readers", client.ACLRule{Prefix: "", Rights: []string{"read"}})
	tok := e.token(t, client.ACLTokenSpec{Policies: []string{"readers"}})
	var pol client.ACLPolicy
	r := doAs(t, e.boot, http.MethodGet, leader.url+"/v1/acl/policy/readers", "")
	r.wantStatus(t, "read policy", 200)
	r.decode(t, &pol)
	harness.WaitUntil(t, 10*time.Second, "the follower to apply the token", func() bool {
		r, err := send(http.MethodGet, follower.url+"/v1/acl/token/self?stale", "", http.Header{client.HeaderToken: {tok.SecretID}})
		return err == nil && r.status == http.StatusOK
	})
	for _, tn := range []*testNode{leader, follower} {
		for _, q := range []string{"", "?stale"} {
			for _, tc := range []struct {
				path, secret string
				index        uint64
			}{
				{"/v1/acl/token/" + tok.AccessorID, e.boot, tok.CreateIndex},
				{"/v1/acl/token/self", tok.SecretID, tok.CreateIndex},
				{"/v1/acl/policy/readers", e.boot, pol.ModifyIndex},
				{"/v1/acl/policies", e.boot, 0},
			} {
				what := tc.path + q + " on " + tn.id
				r := doAs(t, tc.secret, http.MethodGet, tn.url+tc.path+q, "")
				r.wantStatus(t, what, 200)
				r.wantReadHeaders(t, what, tc.index)
			}
		}
	}
}
