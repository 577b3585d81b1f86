package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
)

// A follower serves writes, renewals and linearizable reads by forwarding
// them to the leader and relaying the answer, status, body and headers.
func TestForwardToLeader(t *testing.T) {
	c := startCluster(t, 3)
	leader, follower := c.follower()

	t.Run("acquire", func(t *testing.T) {
		before := leader.hits.Load()
		r := do(t, http.MethodPut, follower.url+"/v1/leases/fwd/a", `{"holder":"h1","ttl":"30s"}`)
		r.wantStatus(t, "acquire through a follower", http.StatusCreated)
		if got := r.header.Get("X-Tenure-Leader-Addr"); got != leader.addr {
			t.Errorf("got X-Tenure-Leader-Addr %q, want the leader's %q", got, leader.addr)
		}
		if got := r.header.Get("Content-Type"); got != "application/json" {
			t.Errorf("got Content-Type %q, want application/json", got)
		}
		if got := r.lease(t); got.Key != "fwd/a" || got.Holder != "h1" || !got.HasExpiresIn {
			t.Errorf("got %+v, want the leader's lease with its deadline", got)
		}
		if leader.hits.Load() == before {
			t.Errorf("the leader saw no request: the follower answered by itself")
		}
		r = do(t, http.MethodGet, leader.url+"/v1/leases/fwd/a", "")
		r.wantStatus(t, "get on the leader", http.StatusOK)
	})

	t.Run("errors are relayed", func(t *testing.T) {
		r := do(t, http.MethodPut, follower.url+"/v1/leases/fwd/a", `{"holder":"h2","ttl":"30s"}`)
		r.wantStatus(t, "acquire of a held key", http.StatusConflict)
		if e := r.apiErr(t); e.Error != "held" || e.Lease == nil || e.Lease.Holder != "h1" {
			t.Errorf("got code %q lease %+v, want held with h1's lease", e.Error, e.Lease)
		}
		r = do(t, http.MethodGet, follower.url+"/v1/leases/fwd/missing", "")
		r.wantStatus(t, "get of a missing key", http.StatusNotFound)
		if e := r.apiErr(t); e.Error != "not_found" {
			t.Errorf("got code %q, want not_found", e.Error)
		}
		r.index(t)
	})

	t.Run("linearizable read", func(t *testing.T) {
		want := do(t, http.MethodGet, leader.url+"/v1/leases/fwd/a", "").lease(t)
		r := do(t, http.MethodGet, follower.url+"/v1/leases/fwd/a", "")
		r.wantStatus(t, "get through a follower", http.StatusOK)
		if got := r.index(t); got != want.ModifyIndex {
			t.Errorf("got X-Tenure-Index %d, want %d", got, want.ModifyIndex)
		}
		if got := r.lease(t); got.Token != want.Token || !got.HasExpiresIn {
			t.Errorf("got %+v, want the leader's view of %+v", got, want)
		}
	})

	t.Run("renew many", func(t *testing.T) {
		a := do(t, http.MethodGet, leader.url+"/v1/leases/fwd/a", "").lease(t)
		b := acquire(t, leader, "fwd/b", "h1")
		body := fmt.Sprintf(`{"holder":"h1","leases":[{"key":"fwd/a","token":%d},{"key":"fwd/b","token":%d}]}`, a.Token, b.Token)
		r := do(t, http.MethodPost, follower.url+"/v1/renew", body)
		r.wantStatus(t, "renew many through a follower", http.StatusOK)
		var out struct {
			Results []wire.RenewResultBody `json:"results"`
		}
		r.decode(t, &out)
		if len(out.Results) != 2 || !out.Results[0].OK || !out.Results[1].OK ||
			out.Results[0].Key != "fwd/a" || out.Results[1].Key != "fwd/b" {
			t.Errorf("got %s, want both renewed, in order", r.body)
		}
	})

	t.Run("release with the query", func(t *testing.T) {
		l := acquire(t, leader, "fwd/c", "h1")
		release(t, follower, "fwd/c", "h1", l.Token)
		if got := do(t, http.MethodGet, leader.url+"/v1/leases/fwd/c", "").lease(t); got.State != "free" {
			t.Errorf("got state %q after a release through a follower, want free", got.State)
		}
	})

	t.Run("key with dots and slashes", func(t *testing.T) {
		r := do(t, http.MethodPut, follower.url+"/v1/leases/x/../y//z", `{"holder":"h1","ttl":"30s"}`)
		r.wantStatus(t, "acquire through a follower", http.StatusCreated)
		if got := r.lease(t); got.Key != "x/../y//z" {
			t.Errorf("got key %q, want x/../y//z", got.Key)
		}
	})

	t.Run("body too large", func(t *testing.T) {
		body := `{"holder":"h1","ttl":"30s","metadata":{"x":"` + strings.Repeat("a", MaxBodyBytes) + `"}}`
		r := do(t, http.MethodPut, follower.url+"/v1/leases/fwd/big", body)
		r.wantRefused(t, "acquire through a follower", http.StatusBadRequest, "body_too_large", "body", "")
	})

	t.Run("follower is ready", func(t *testing.T) {
		r := do(t, http.MethodGet, follower.url+"/readyz", "")
		r.wantStatus(t, "readyz on a follower", http.StatusOK)
		var got client.Readiness
		r.decode(t, &got)
		if !got.Ready || got.Role != "follower" || got.LeaderID != leader.id {
			t.Errorf("got %+v, want a ready follower of %s", got, leader.id)
		}
	})
}

// A request that was already forwarded once is not forwarded again: a node
// that does not lead answers 503 no_leader, so the client retries.
func TestForwardedRequestIsNotForwardedAgain(t *testing.T) {
	c := startCluster(t, 3)
	leader, follower := c.follower()
	for _, tc := range []struct {
		name   string
		method string
		path   string
		body   string
	}{
		{"acquire", http.MethodPut, "/v1/leases/hop", `{"holder":"h1","ttl":"30s"}`},
		{"linearizable read", http.MethodGet, "/v1/leases/hop", ""},
		{"renew many", http.MethodPost, "/v1/renew", `{"holder":"h1","leases":[{"key":"hop","token":1}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := leader.hits.Load()
			r, err := send(tc.method, follower.url+tc.path, tc.body, http.Header{"X-Tenure-Forwarded-By": {"n9"}})
			if err != nil {
				t.Fatal(err)
			}
			r.wantStatus(t, "forwarded request to a follower", http.StatusServiceUnavailable)
			if e := r.apiErr(t); e.Error != "no_leader" {
				t.Errorf("got code %q, want no_leader", e.Error)
			}
			if r.header.Get("Retry-After") == "" {
				t.Errorf("got no Retry-After header")
			}
			if got := leader.hits.Load(); got != before {
				t.Errorf("the leader saw %d request(s): the follower forwarded a second time", got-before)
			}
		})
	}
	do(t, http.MethodGet, leader.url+"/v1/leases/hop", "").wantStatus(t, "get on the leader", http.StatusNotFound)

	// The leader itself serves a forwarded request.
	r, err := send(http.MethodPut, leader.url+"/v1/leases/hop", `{"holder":"h1","ttl":"30s"}`, http.Header{"X-Tenure-Forwarded-By": {follower.id}})
	if err != nil {
		t.Fatal(err)
	}
	r.wantStatus(t, "forwarded request to the leader", http.StatusCreated)
}

// Blocking reads work on a follower: stale ones are served from its own
// state machine and wake when the change is applied there, linearizable
// ones are forwarded and wait on the leader.
func TestBlockingOnFollower(t *testing.T) {
	c := startCluster(t, 3)
	leader, follower := c.follower()
	for _, tc := range []struct {
		name  string
		query string
		// wantOnLeader: the wait happens on the leader.
		wantOnLeader bool
	}{
		{"stale", "&stale", false},
		{"linearizable", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "follow-" + tc.name
			l := acquire(t, leader, key, "h1")
			harness.WaitUntil(t, 5*time.Second, "the follower to apply the acquisition", func() bool {
				r, err := send(http.MethodGet, follower.url+"/v1/leases/"+key+"?stale", "", nil)
				return err == nil && r.status == http.StatusOK
			})
			before := leader.hits.Load()
			ch := sendAsync(http.MethodGet, fmt.Sprintf("%s/v1/leases/%s?index=%d&wait=5s%s", follower.url, key, l.ModifyIndex, tc.query))
			waitBlocked(t, follower, 1)
			if tc.wantOnLeader {
				waitBlocked(t, leader, 1)
			}
			quiet(t, ch, 200*time.Millisecond, "before the key changed")
			release(t, leader, key, "h1", l.Token)
			r := receive(t, ch, 5*time.Second)
			r.wantStatus(t, "blocking read on a follower", http.StatusOK)
			if got := r.index(t); got <= l.ModifyIndex {
				t.Errorf("got X-Tenure-Index %d, want more than %d", got, l.ModifyIndex)
			}
			if got := r.lease(t); got.State != "free" || got.Reason != "released" {
				t.Errorf("got state %q reason %q, want free, released", got.State, got.Reason)
			}
			if got := r.header.Get("X-Tenure-Known-Leader"); got != "true" {
				t.Errorf("got X-Tenure-Known-Leader %q, want true", got)
			}
			if r.header.Get("X-Tenure-Last-Contact") == "" {
				t.Errorf("got no X-Tenure-Last-Contact header")
			}
			// One hit from the release, plus the forwarded read when the
			// read is linearizable.
			hits := leader.hits.Load() - before
			if onLeader := hits > 1; onLeader != tc.wantOnLeader {
				t.Errorf("leader saw %d request(s); want the read served on the leader: %v", hits, tc.wantOnLeader)
			}
		})
	}
}

// With TLS on, a follower forwards to the leader over https, presenting
// its own server certificate, which the leader (requiring client
// certificates) accepts.
func TestForwardOverMutualTLS(t *testing.T) {
	pki := newTestPKI(t)
	c := startClusterTLS(t, 3, pki)
	leader, follower := c.follower()
	if !strings.HasPrefix(follower.url, "https://") {
		t.Fatalf("follower URL %q, want https", follower.url)
	}
	hc := pki.client(t, "app")
	send := func(method, url, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	before := leader.hits.Load()
	if code, body := send(http.MethodPut, follower.url+"/v1/leases/tls/a", `{"holder":"h1","ttl":"30s"}`); code != http.StatusCreated {
		t.Fatalf("acquire through a follower: got %d %s, want 201", code, body)
	}
	if leader.hits.Load() == before {
		t.Fatal("the leader saw no request: the follower answered by itself")
	}
	if code, body := send(http.MethodGet, follower.url+"/v1/leases/tls/a", ""); code != http.StatusOK || !strings.Contains(body, `"holder":"h1"`) {
		t.Fatalf("linearizable read through a follower: got %d %s, want 200 with h1", code, body)
	}
}

// movingLeader is a follower whose known leader can change while a
// request it forwarded is in flight.
type movingLeader struct {
	fakeReplica
	leader atomic.Value // string
}

func (m *movingLeader) LeaderHTTPAddr() string { return m.leader.Load().(string) }
func (m *movingLeader) LeaderHTTP(context.Context) (string, string) {
	return "n1", m.leader.Load().(string)
}

// newMovingLeader is the follower n2 of the leader at addr.
func newMovingLeader(addr string) (*movingLeader, Node) {
	m := &movingLeader{fakeReplica: fakeReplica{status: cluster.Status{NodeID: "n2", Role: "follower"}}}
	m.leader.Store(addr)
	return m, Node{Replica: m}
}

// A follower that forwarded a request to a leader that then stops being
// the one it follows (cut off, or replaced) answers leadership_lost (the
// outcome is unknown: retry) instead of holding the request for as long as
// the old leader keeps silent; a blocking acquire would otherwise hang for
// its whole wait while another leader could serve it.
func TestForwardGivesUpWhenTheLeaderChanges(t *testing.T) {
	reached := make(chan struct{}, 1)
	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached <- struct{}{}
		select { // a leader cut off from this follower: no answer
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(silent.Close)
	t.Cleanup(func() { close(release) })
	m, n := newMovingLeader(strings.TrimPrefix(silent.URL, "http://"))
	front := httptest.NewServer(serveFake(t, n))
	t.Cleanup(front.Close)

	type answer struct {
		r   reply
		err error
	}
	got := make(chan answer, 1)
	go func() {
		req, err := http.NewRequestWithContext(harness.Context(t, time.Minute), http.MethodPut, front.URL+"/v1/leases/k",
			strings.NewReader(`{"holder":"h","ttl":"10s","wait":"55s"}`))
		if err != nil {
			got <- answer{err: err}
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		got <- answer{r: reply{status: resp.StatusCode, header: resp.Header, body: body}, err: err}
	}()
	select {
	case <-reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the follower did not forward the acquire")
	}
	select {
	case a := <-got:
		t.Fatalf("answered while the leader was unchanged: %+v %v", a.r, a.err)
	case <-time.After(3 * leaderCheckInterval):
	}
	m.leader.Store("") // the follower lost its leader
	a := <-got
	if a.err != nil {
		t.Fatal(a.err)
	}
	a.r.wantStatus(t, "a forwarded acquire after the leader changed", http.StatusServiceUnavailable)
	if e := a.r.apiErr(t); e.Error != wire.CodeLeadershipLost {
		t.Errorf("got code %q, want %s (outcome unknown)", e.Error, wire.CodeLeadershipLost)
	}
}

// TestFailedForwardNeverShowsTheQuery: a release may carry its lease
// secret in the query (?secret=). When a follower cannot reach the leader,
// its answer (503 leadership_lost) and its debug log name the leader and
// the path, never the query and so never the secret.
func TestFailedForwardNeverShowsTheQuery(t *testing.T) {
	const secret = "5ec2e75ec2e75ec2e75ec2e75ec2e7aa"
	_, n := newMovingLeader(harness.FreeAddr(t)) // nothing listens: the forward fails
	var logs harness.Buffer
	cfg := DefaultConfig()
	cfg.Node = n
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(s)
	t.Cleanup(front.Close)

	r := do(t, http.MethodDelete, front.URL+"/v1/leases/k/a?holder=h&token=1&secret="+secret, "")
	r.wantStatus(t, "a release through a follower that cannot reach the leader", http.StatusServiceUnavailable)
	if e := r.apiErr(t); e.Error != wire.CodeLeadershipLost || !strings.Contains(e.Message, "/v1/leases/k/a") {
		t.Errorf("answered %q %q, want %s naming the path", e.Error, e.Message, wire.CodeLeadershipLost)
	}
	if strings.Contains(string(r.body), secret) {
		t.Errorf("the answer shows the lease secret: %s", r.body)
	}
	if !strings.Contains(logs.String(), "forward failed") {
		t.Fatalf("no debug line for the failed forward in:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the log shows the lease secret:\n%s", logs.String())
	}
}
