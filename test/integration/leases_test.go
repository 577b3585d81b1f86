package integration

import (
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// TestEveryNodeAnswersAndForwards: a user may send any request to any node.
// Followers forward writes and linearizable reads to the leader and relay
// its answer; stale reads are served locally and say how stale they are.
func TestEveryNodeAnswersAndForwards(t *testing.T) {
	c := startCluster(t, 3)

	// Nodes by role, resolved when a case starts: 0 is the leader, 1 and
	// 2 its followers.
	tests := []struct {
		name  string
		first int // acquires the key
		again int // repeats the acquire for the same holder
		other int // tries to acquire for another holder
		read  int // a follower, serves the linearizable read
	}{
		{name: "through the leader", first: 0, again: 1, other: 2, read: 1},
		{name: "through the first follower", first: 1, again: 2, other: 0, read: 2},
		{name: "through the second follower", first: 2, again: 0, other: 1, read: 1},
	}
	var lastToken uint64
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := c.leader(t)
			term := c.mustStatus(t, l).Term
			roles := append([]int{l}, c.followers(l)...)
			tt.first, tt.again, tt.other, tt.read = roles[tt.first], roles[tt.again], roles[tt.other], roles[tt.read]
			var headers []seenHeader
			checkLeaderHeader := func(what string, r reply) {
				headers = append(headers, seenHeader{what: what, got: r.Header.Get("X-Tenure-Leader-Addr")})
			}
			defer func() { c.checkLeaderHeaders(t, l, term, headers) }()

			key := "forward/" + c.nodes[tt.first].id
			body := wire.AcquireBody{Holder: "worker-a", TTL: "30s"}

			// send makes what through node, fails unless it is answered
			// status, checks its leader header and decodes it into v.
			send := func(what string, node int, method string, body any, status int, v any) reply {
				t.Helper()
				r := c.call(t, node, method, "/v1/leases/"+key, body)
				if r.Status != status {
					t.Fatalf("%s via %s: got %v, want %d", what, c.nodes[node].id, r, status)
				}
				checkLeaderHeader(what, r)
				r.decode(t, v)
				return r
			}

			var granted lease
			send("first acquire", tt.first, http.MethodPut, body, http.StatusCreated, &granted)
			if granted.Key != key || granted.Holder != "worker-a" || granted.State != "held" || granted.TTL != 30*time.Second {
				t.Errorf("first acquire: got %+v, want %s held by worker-a for 30s", granted, key)
			}
			if granted.Token <= lastToken {
				t.Errorf("first acquire: token %d, want above the previous grant's %d", granted.Token, lastToken)
			}
			lastToken = granted.Token

			var repeated lease
			send("repeat acquire by the same holder", tt.again, http.MethodPut, body, http.StatusOK, &repeated)
			if repeated.Token != granted.Token || repeated.Holder != "worker-a" || repeated.State != "held" {
				t.Errorf("repeat acquire: got token %d holder %q state %q, want the same lease (token %d)", repeated.Token, repeated.Holder, repeated.State, granted.Token)
			}

			var conflict apiError
			r := send("conflicting acquire", tt.other, http.MethodPut, wire.AcquireBody{Holder: "worker-b", TTL: "30s"}, http.StatusConflict, &conflict)
			if conflict.Error != "held" {
				t.Errorf("conflicting acquire: error %q, want held", conflict.Error)
			}
			if conflict.Lease == nil {
				t.Fatalf("conflicting acquire: no current lease in %s", r.Body)
			}
			if conflict.Lease.Holder != "worker-a" || conflict.Lease.Token != granted.Token || conflict.Lease.State != "held" {
				t.Errorf("conflicting acquire: current lease %+v, want held by worker-a with token %d", *conflict.Lease, granted.Token)
			}

			var read lease
			send("linearizable GET", tt.read, http.MethodGet, nil, http.StatusOK, &read)
			if read.Holder != "worker-a" || read.Token != granted.Token || read.State != "held" || read.ModifyIndex < repeated.ModifyIndex {
				t.Errorf("linearizable GET via follower: got %+v, want held by worker-a, token %d, modify_index >= %d", read, granted.Token, repeated.ModifyIndex)
			}

			for i, nd := range c.nodes {
				var stale reply
				poll.WaitFor(t, 5*time.Second, func() error {
					r := c.call(t, i, http.MethodGet, "/v1/leases/"+key+"?stale=true", nil)
					idx, err := strconv.ParseUint(r.Header.Get("X-Tenure-Index"), 10, 64)
					if err != nil {
						return fmt.Errorf("stale GET via %s: X-Tenure-Index %q: %v (answer %v)", nd.id, r.Header.Get("X-Tenure-Index"), err, r)
					}
					if r.Status != http.StatusOK || idx < repeated.ModifyIndex {
						return fmt.Errorf("stale GET via %s: got %v with X-Tenure-Index %d, want 200 at index >= %d", nd.id, r, idx, repeated.ModifyIndex)
					}
					stale = r
					return nil
				})
				var got lease
				stale.decode(t, &got)
				if got.Holder != "worker-a" || got.Token != granted.Token || got.State != "held" {
					t.Errorf("stale GET via %s: got %+v, want held by worker-a with token %d", nd.id, got, granted.Token)
				}
				contact := stale.Header.Get("X-Tenure-Last-Contact")
				ms, err := strconv.ParseInt(contact, 10, 64)
				switch {
				case err != nil:
					t.Errorf("stale GET via %s: X-Tenure-Last-Contact %q is not milliseconds", nd.id, contact)
				case i == l && ms != 0:
					t.Errorf("stale GET via the leader: X-Tenure-Last-Contact = %d, want 0", ms)
				case ms < 0:
					t.Errorf("stale GET via follower %s: X-Tenure-Last-Contact = %d, want the time since it heard from the leader", nd.id, ms)
				}
				if got := stale.Header.Get("X-Tenure-Known-Leader"); got != "true" {
					t.Errorf("stale GET via %s: X-Tenure-Known-Leader = %q, want true", nd.id, got)
				}
				checkLeaderHeader("stale GET via "+nd.id, stale)
				t.Logf("stale read via %s: X-Tenure-Index %s, X-Tenure-Last-Contact %sms", nd.id, stale.Header.Get("X-Tenure-Index"), contact)
			}
		})
	}
}

// TestBadInputIsRejectedAndChangesNothing: every malformed request is
// answered 400 with the documented code and the field to blame, whichever
// node receives it, and none of them changes any lease or uses up a token.
func TestBadInputIsRejectedAndChangesNothing(t *testing.T) {
	c, l := startLedCluster(t, 3)
	held := c.acquire(t, l, "bad/held", "owner", "30s", http.StatusCreated)
	free := c.acquire(t, l, "bad/free", "owner", "30s", http.StatusCreated)
	c.release(t, l, "bad/free", "owner", free.Token)

	before := c.list(t, l)
	lastToken := c.mustStatus(t, l).LastToken

	metadata := func(entries, keyLen, valueLen int) string {
		parts := make([]string, entries)
		for i := range parts {
			k := fmt.Sprintf("k%d", i)
			if keyLen > len(k) {
				k += strings.Repeat("k", keyLen-len(k))
			}
			parts[i] = fmt.Sprintf("%q:%q", k, strings.Repeat("v", valueLen))
		}
		return fmt.Sprintf(`{"holder":"h","ttl":"5s","metadata":{%s}}`, strings.Join(parts, ","))
	}
	okBody := `{"holder":"h","ttl":"5s"}`
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		code   string
		field  string
	}{
		{name: "key with a forbidden character", method: http.MethodPut, path: "/v1/leases/bad*key", body: okBody, code: "invalid_key", field: "key"},
		{name: "key with an escaped space", method: http.MethodPut, path: "/v1/leases/bad%20key", body: okBody, code: "invalid_key", field: "key"},
		{name: "key over 256 bytes", method: http.MethodPut, path: "/v1/leases/" + strings.Repeat("k", 257), body: okBody, code: "invalid_key", field: "key"},
		{name: "empty holder", method: http.MethodPut, path: "/v1/leases/bad/new", body: `{"holder":"","ttl":"5s"}`, code: "invalid_holder", field: "holder"},
		{name: "holder over 256 bytes", method: http.MethodPut, path: "/v1/leases/bad/new", body: `{"holder":"` + strings.Repeat("h", 257) + `","ttl":"5s"}`, code: "invalid_holder", field: "holder"},
		{name: "missing ttl", method: http.MethodPut, path: "/v1/leases/bad/new", body: `{"holder":"h"}`, code: "invalid_ttl", field: "ttl"},
		{name: "ttl below min-ttl", method: http.MethodPut, path: "/v1/leases/bad/new", body: `{"holder":"h","ttl":"500ms"}`, code: "invalid_ttl", field: "ttl"},
		{name: "ttl above max-ttl", method: http.MethodPut, path: "/v1/leases/bad/new", body: `{"holder":"h","ttl":"2h"}`, code: "invalid_ttl", field: "ttl"},
		{name: "ttl below min-ttl from the holder of a held key", method: http.MethodPut, path: "/v1/leases/bad/held", body: `{"holder":"owner","ttl":"100ms"}`, code: "invalid_ttl", field: "ttl"},
		{name: "unparsable ttl", method: http.MethodPut, path: "/v1/leases/bad/new", body: `{"holder":"h","ttl":"soon"}`, code: "invalid_ttl", field: "ttl"},
		{name: "ttl as a number", method: http.MethodPut, path: "/v1/leases/bad/new", body: `{"holder":"h","ttl":5}`, code: "invalid_ttl", field: "ttl"},
		{name: "negative wait", method: http.MethodPut, path: "/v1/leases/bad/new", body: `{"holder":"h","ttl":"5s","wait":"-1s"}`, code: "invalid_wait", field: "wait"},
		{name: "unparsable wait", method: http.MethodPut, path: "/v1/leases/bad/new", body: `{"holder":"h","ttl":"5s","wait":"later"}`, code: "invalid_wait", field: "wait"},
		{name: "wait above max-wait", method: http.MethodPut, path: "/v1/leases/bad/new", body: `{"holder":"h","ttl":"5s","wait":"11m"}`, code: "invalid_wait", field: "wait"},
		{name: "unknown field", method: http.MethodPut, path: "/v1/leases/bad/new", body: `{"holder":"h","ttl":"5s","colour":"red"}`, code: "invalid_body", field: "colour"},
		{name: "trailing data", method: http.MethodPut, path: "/v1/leases/bad/new", body: okBody + `{"holder":"x"}`, code: "invalid_body", field: "body"},
		{name: "not JSON", method: http.MethodPut, path: "/v1/leases/bad/new", body: `holder=h&ttl=5s`, code: "invalid_body", field: "body"},
		{name: "empty body", method: http.MethodPut, path: "/v1/leases/bad/new", body: ``, code: "invalid_body", field: "body"},
		{name: "valid JSON over 64 KiB", method: http.MethodPut, path: "/v1/leases/bad/new", body: `{"holder":"h","ttl":"5s"` + strings.Repeat(" ", 64<<10) + `}`, code: "body_too_large", field: "body"},
		{name: "17 metadata entries", method: http.MethodPut, path: "/v1/leases/bad/new", body: metadata(17, 1, 1), code: "invalid_metadata", field: "metadata"},
		{name: "metadata key over 64 bytes", method: http.MethodPut, path: "/v1/leases/bad/new", body: metadata(1, 65, 1), code: "invalid_metadata", field: "metadata"},
		{name: "metadata value over 1024 bytes", method: http.MethodPut, path: "/v1/leases/bad/new", body: metadata(1, 1, 1025), code: "invalid_metadata", field: "metadata"},
		{name: "renew without token", method: http.MethodPost, path: "/v1/renew/bad/held", body: `{"holder":"owner"}`, code: "invalid_token", field: "token"},
		{name: "renew with a string token", method: http.MethodPost, path: "/v1/renew/bad/held", body: `{"holder":"owner","token":"1"}`, code: "invalid_token", field: "token"},
		{name: "renew without holder", method: http.MethodPost, path: "/v1/renew/bad/held", body: fmt.Sprintf(`{"token":%d}`, held.Token), code: "invalid_holder", field: "holder"},
		{name: "release with token=abc", method: http.MethodDelete, path: "/v1/leases/bad/held?holder=owner&token=abc", code: "invalid_token", field: "token"},
		{name: "release without token", method: http.MethodDelete, path: "/v1/leases/bad/held?holder=owner", code: "invalid_token", field: "token"},
		{name: "list with state=bogus", method: http.MethodGet, path: "/v1/leases?state=bogus", code: "invalid_query", field: "state"},
		{name: "blocking read with index=abc", method: http.MethodGet, path: "/v1/leases/bad/held?index=abc", code: "invalid_index", field: "index"},
		{name: "blocking list with index=-1", method: http.MethodGet, path: "/v1/leases?index=-1", code: "invalid_index", field: "index"},
		{name: "blocking read with a negative wait", method: http.MethodGet, path: "/v1/leases/bad/held?index=1&wait=-5s", code: "invalid_wait", field: "wait"},
		{name: "stale blocking read with an unparsable wait", method: http.MethodGet, path: "/v1/leases/bad/held?stale=true&index=1&wait=soon", code: "invalid_wait", field: "wait"},
	}
	for n, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			via := n % len(c.nodes) // every node, leader and followers alike
			var body any
			if tt.body != "" || tt.method == http.MethodPut {
				body = tt.body
			}
			r := c.call(t, via, tt.method, tt.path, body)
			if r.Status != http.StatusBadRequest {
				t.Fatalf("%s %.80s via %s: got %.300v, want 400", tt.method, tt.path, c.nodes[via].id, r)
			}
			var got apiError
			r.decode(t, &got)
			if got.Error != tt.code || got.Field != tt.field {
				t.Errorf("%s %.80s via %s: got error %q field %q, want error %q field %q (message %q)", tt.method, tt.path, c.nodes[via].id, got.Error, got.Field, tt.code, tt.field, got.Message)
			}
			if got.Message == "" {
				t.Errorf("%s %.80s: empty message", tt.method, tt.path)
			}
		})
	}

	after := c.list(t, l)
	if after.Index != before.Index {
		t.Errorf("lease list index: got %d after the bad requests, want %d as before", after.Index, before.Index)
	}
	if got, want := replicatedLeases(after.Leases), replicatedLeases(before.Leases); !reflect.DeepEqual(got, want) {
		t.Errorf("leases changed by bad requests:\n got %+v\nwant %+v", got, want)
	}
	if got := c.mustStatus(t, l).LastToken; got != lastToken {
		t.Errorf("last_token: got %d after the bad requests, want %d as before", got, lastToken)
	}
	if got := c.get(t, l, "bad/held"); got.Holder != "owner" || got.Token != held.Token || got.TTL != 30*time.Second || got.State != "held" {
		t.Errorf("bad/held after the bad requests: got %+v, want held by owner, token %d, ttl 30s", got, held.Token)
	}
}

// seenHeader is an X-Tenure-Leader-Addr header of one answer.
type seenHeader struct {
	what string
	got  string
}

// checkLeaderHeaders checks that every answer named the leader's HTTP
// address, l's, as long as l stayed leader in term. When the leadership
// moved meanwhile (a busy machine), an answer may name either leader: then
// each must at least name one of the servers.
func (c *cluster) checkLeaderHeaders(t *testing.T, l int, term uint64, headers []seenHeader) {
	t.Helper()
	now := c.leader(t)
	if st := c.mustStatus(t, now); now == l && st.Term == term {
		for _, h := range headers {
			if h.got != c.nodes[l].httpAddr {
				t.Errorf("%s: X-Tenure-Leader-Addr = %q, want the leader's %q", h.what, h.got, c.nodes[l].httpAddr)
			}
		}
		return
	}
	t.Logf("the leadership moved from %s (term %d) to %s during the case: checking only that X-Tenure-Leader-Addr names a server", c.nodes[l].id, term, c.nodes[now].id)
	addrs := map[string]bool{}
	for _, nd := range c.nodes {
		addrs[nd.httpAddr] = true
	}
	for _, h := range headers {
		if !addrs[h.got] {
			t.Errorf("%s: X-Tenure-Leader-Addr = %q, want one of the servers' HTTP addresses", h.what, h.got)
		}
	}
}

func replicatedLeases(ls []lease) []lease {
	out := make([]lease, len(ls))
	for i, l := range ls {
		out[i] = replicated(l)
	}
	return out
}
