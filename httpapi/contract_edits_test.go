package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
)

func listKeys(t *testing.T, r reply) []string {
	t.Helper()
	var l wire.LeaseList
	r.decode(t, &l)
	var out []string
	for _, x := range l.Leases {
		out = append(out, fmt.Sprintf("%s/%d/%s", x.Key, x.Token, x.Reason))
	}
	return out
}

// "Which keys of my groups have no owner" has one answer: state=free lists
// the group keys never acquired too, and a blocking free list wakes when a
// group changes.
func TestListFreeNamesNeverAcquiredGroupKeys(t *testing.T) {
	tn := startNode(t)
	do(t, "PUT", tn.url+"/v1/groups/scenes", `{"keys":["scene-0","scene-1","scene-2"]}`).wantStatus(t, "put group", 200)
	acquire(t, tn, "scene-0", "h1")
	l := released(t, tn, "scene-1", "h1")
	acquire(t, tn, "other", "h2")

	for _, tc := range []struct {
		query string
		want  string
	}{
		{"state=free", fmt.Sprintf("[scene-1/%d/released scene-2/0/never_acquired]", l.Token)},
		{"state=free&prefix=scene-2", "[scene-2/0/never_acquired]"},
		{"state=free&holder=h1", fmt.Sprintf("[scene-1/%d/released]", l.Token)},
		{"state=held&prefix=scene-", "[scene-0/1/]"},
	} {
		r := do(t, "GET", tn.url+"/v1/leases?"+tc.query, "")
		r.wantStatus(t, tc.query, 200)
		if got := fmt.Sprint(listKeys(t, r)); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.query, got, tc.want)
		}
	}

	r := do(t, "GET", tn.url+"/v1/leases?state=free", "")
	idx := r.index(t)
	r = blockedGet(t, tn, fmt.Sprintf("%s/v1/leases?state=free&index=%d&wait=5s", tn.url, idx), "before anything changed", func() {
		do(t, "POST", tn.url+"/v1/groups/scenes/keys", `{"add":["scene-3"]}`).wantStatus(t, "add key", 200)
	})
	r.wantStatus(t, "blocking free list", 200)
	if got := r.index(t); got <= idx {
		t.Errorf("index after the group change = %d, want past %d", got, idx)
	}
	if got := fmt.Sprint(listKeys(t, r)); !strings.Contains(got, "scene-3/0/never_acquired") {
		t.Errorf("free list after adding scene-3 = %s, want it listed", got)
	}
}

// Replacing a group takes its modify index (cas) or an explicit replace;
// a plain PUT only creates.
func TestPutGroupCompareAndSet(t *testing.T) {
	tn := startNode(t)
	var g client.GroupSummary
	r := do(t, "PUT", tn.url+"/v1/groups/g?cas=0", `{"keys":["a"]}`)
	r.wantStatus(t, "create with cas=0", 200)
	r.decode(t, &g)

	for _, tc := range []struct {
		name, query string
		status      int
		code        string
	}{
		{"without cas", "", 409, wire.CodeCASFailed},
		{"cas=0 on an existing group", "?cas=0", 409, wire.CodeCASFailed},
		{"a stale cas", fmt.Sprintf("?cas=%d", g.ModifyIndex+1), 409, wire.CodeCASFailed},
		{"a bad cas", "?cas=x", 400, wire.CodeInvalidQuery},
		{"cas and replace", "?cas=1&replace=true", 400, wire.CodeInvalidQuery},
		{"a bad replace", "?replace=maybe", 400, wire.CodeInvalidQuery},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, "PUT", tn.url+"/v1/groups/g"+tc.query, `{"keys":["b"]}`)
			r.wantStatus(t, "put", tc.status)
			e := r.apiErr(t)
			if e.Error != tc.code {
				t.Errorf("code = %q, want %q", e.Error, tc.code)
			}
			if tc.code == wire.CodeCASFailed && (e.Group == nil || e.Group.ModifyIndex != g.ModifyIndex || e.Group.Keys != 1) {
				t.Errorf("group in the error = %+v, want the current one (modify index %d)", e.Group, g.ModifyIndex)
			}
		})
	}
	r = do(t, "PUT", fmt.Sprintf("%s/v1/groups/g?cas=%d", tn.url, g.ModifyIndex), `{"keys":["b","c"]}`)
	r.wantStatus(t, "put with the current cas", 200)
	r.decode(t, &g)
	if g.Keys != 2 {
		t.Errorf("after cas put: %d keys, want 2", g.Keys)
	}
	do(t, "PUT", tn.url+"/v1/groups/g?replace=true", `{"keys":["d"]}`).wantStatus(t, "replace", 200)
	do(t, "PUT", tn.url+"/v1/groups/new", `{"keys":["e"]}`).wantStatus(t, "create without cas", 200)
}

func TestEditControl(t *testing.T) {
	tn := startNode(t)
	steps := []struct {
		body string
		want string
	}{
		{`{"prohibit":["w2","w1"]}`, "false [w1 w2]"},
		{`{"disabled":true}`, "true [w1 w2]"},
		{`{"allow":["w1"]}`, "true [w2]"},
		{`{"disabled":false,"allow":["w2"]}`, "false []"},
	}
	// A key that nothing knows is most likely a typo: refused unless force.
	do(t, "PATCH", tn.url+"/v1/controls/k", `{"prohibit":["w1"]}`).wantStatus(t, "patch of an unknown key", 404)
	for _, s := range steps {
		r := do(t, "PATCH", tn.url+"/v1/controls/k?force=true", s.body)
		r.wantStatus(t, "patch "+s.body, 200)
		var c client.KeyControl
		r.decode(t, &c)
		if got := fmt.Sprint(c.Disabled, " ", c.Prohibited); got != s.want || c.Key != "k" {
			t.Errorf("patch %s = %s %s, want k %s", s.body, c.Key, got, s.want)
		}
	}
	r := do(t, "PATCH", tn.url+"/v1/controls/k", `{"prohibit":[""]}`)
	r.wantRefused(t, "an empty holder", 400, wire.CodeInvalidProhibited, "prohibit", "")
}

// An edit that changes nothing is refused, naming what it lacks: it would
// still be written to the log and reported as a change.
func TestEmptyEditIsRefused(t *testing.T) {
	tn := startNode(t)
	r := do(t, "PATCH", tn.url+"/v1/controls/k?force=true", `{}`)
	r.wantStatus(t, "empty edit", 400)
	if e := r.apiErr(t); e.Field != "edit" {
		t.Errorf("empty edit: code %q field %q, want field edit", e.Error, e.Field)
	}
}

// A drain's body may be left out, whether the request says Content-Length
// 0 or sends an empty chunked body: it drains.
func TestDrainWithoutBody(t *testing.T) {
	tn := startNode(t)
	for _, chunked := range []bool{false, true} {
		req, err := http.NewRequest("POST", tn.url+"/v1/workers/w9/drain?force=true", strings.NewReader(""))
		if err != nil {
			t.Fatal(err)
		}
		if chunked {
			req.ContentLength = -1
			req.TransferEncoding = []string{"chunked"}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"draining":true`) {
			t.Errorf("chunked=%v: %d %s, want 200 draining", chunked, resp.StatusCode, body)
		}
	}
}
