package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/test/harness"
)

// reply is one HTTP answer.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// decode unmarshals the body into v and fails t when it is not JSON.
func (r reply) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %d answer %q: %v", r.Status, r.Body, err)
	}
}

func (r reply) String() string {
	return fmt.Sprintf("%d %s", r.Status, bytes.TrimSpace(r.Body))
}

// call sends a request to node i and fails t when no answer comes. body is
// sent as is when it is a string, as JSON otherwise, and not at all when nil.
//
// Like every client, it sends the request again while the answer is 503
// no_leader (the API's promise: nothing was done, retry), for up to
// electionTimeout: an election on a busy test machine is not what a test
// checks unless it says so. Tests that do, use callOnce.
func (c *cluster) call(t *testing.T, i int, method, path string, body any) reply {
	t.Helper()
	deadline := time.Now().Add(electionTimeout)
	for {
		r := c.callOnce(t, i, method, path, body)
		if r.Status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			return r
		}
		var e apiError
		if json.Unmarshal(r.Body, &e) != nil || e.Error != "no_leader" {
			return r
		}
		time.Sleep(pollInterval)
	}
}

// callOnce sends one request to node i and fails t when no answer comes.
func (c *cluster) callOnce(t *testing.T, i int, method, path string, body any) reply {
	t.Helper()
	r, err := c.try(c.nodes[i].httpAddr, method, path, body)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, c.nodes[i].id, err)
	}
	return r
}

// try sends one request to addr; it is safe to call from any goroutine.
func (c *cluster) try(addr, method, path string, body any) (reply, error) {
	text, ok := body.(string)
	if !ok && body != nil {
		buf, err := json.Marshal(body)
		if err != nil {
			return reply{}, err
		}
		text = string(buf)
	}
	path, text = harness.WithLeaseSecret(suiteSecret, method, path, text)
	var header http.Header
	if c.token != "" {
		header = http.Header{client.HeaderToken: {c.token}}
	}
	r, err := harness.Send(c.http, method, c.scheme+"://"+addr+path, text, header)
	return reply(r), err
}

// suiteSecret is the lease secret that try adds to the acquisitions,
// renewals and releases that name none, as a client sends its own: the
// tests' raw calls act as one client. Tests of the secret itself send
// theirs.
const suiteSecret = "5u173c0de5u173c0de5u173c0de5u173"

// The API's bodies are package client's types: the tests read answers
// with the same declarations that every client uses.
type (
	lease      = client.LeaseInfo
	apiError   = wire.ErrorBody
	leaseList  = wire.LeaseList
	status     = client.NodeStatus
	serverInfo = client.ServerInfo
)

// replicated is the lease without the leader's in-memory deadline, which
// changes with every read.
func replicated(l lease) lease {
	l.ExpiresIn, l.HasExpiresIn, l.RenewedAt = 0, false, time.Time{}
	return l
}

// serverOf returns the entry for id in the status's Raft configuration.
func serverOf(s status, id string) (serverInfo, bool) {
	for _, srv := range s.Servers {
		if srv.ID == id {
			return srv, true
		}
	}
	return serverInfo{}, false
}

// status reads node i's /v1/status.
func (c *cluster) status(i int) (status, error) {
	return c.statusAt(c.nodes[i].httpAddr)
}

func (c *cluster) statusAt(addr string) (status, error) {
	var st status
	r, err := c.try(addr, http.MethodGet, "/v1/status", nil)
	if err != nil {
		return st, err
	}
	if r.Status != http.StatusOK {
		return st, fmt.Errorf("GET /v1/status on %s: %v", addr, r)
	}
	if err := json.Unmarshal(r.Body, &st); err != nil {
		return st, fmt.Errorf("GET /v1/status on %s: %w", addr, err)
	}
	return st, nil
}

// mustStatus reads node i's status and fails t on error.
func (c *cluster) mustStatus(t *testing.T, i int) status {
	t.Helper()
	st, err := c.status(i)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// acquire acquires key through node i and fails t unless the answer has
// status want; it returns the lease of a 200 or 201.
func (c *cluster) acquire(t *testing.T, i int, key, holder, ttl string, want int) lease {
	t.Helper()
	r := c.call(t, i, http.MethodPut, "/v1/leases/"+key, wire.AcquireBody{Holder: holder, TTL: ttl})
	if r.Status != want {
		t.Fatalf("acquire %s for %s via %s: got %v, want status %d", key, holder, c.nodes[i].id, r, want)
	}
	var l lease
	if want == http.StatusOK || want == http.StatusCreated {
		r.decode(t, &l)
	}
	return l
}

// release releases key through node i and fails t unless it answers 204.
func (c *cluster) release(t *testing.T, i int, key, holder string, token uint64) {
	t.Helper()
	path := fmt.Sprintf("/v1/leases/%s?holder=%s&token=%d", key, holder, token)
	if r := c.call(t, i, http.MethodDelete, path, nil); r.Status != http.StatusNoContent {
		t.Fatalf("release %s (%s, token %d) via %s: got %v, want 204", key, holder, token, c.nodes[i].id, r)
	}
}

// get reads one lease through node i (linearizable unless path says
// otherwise) and fails t unless it answers 200.
func (c *cluster) get(t *testing.T, i int, key string) lease {
	t.Helper()
	r := c.call(t, i, http.MethodGet, "/v1/leases/"+key, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s via %s: got %v, want 200", key, c.nodes[i].id, r)
	}
	var l lease
	r.decode(t, &l)
	return l
}

// list reads the linearizable lease list through node i.
func (c *cluster) list(t *testing.T, i int) leaseList {
	t.Helper()
	r := c.call(t, i, http.MethodGet, "/v1/leases", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET /v1/leases via %s: got %v, want 200", c.nodes[i].id, r)
	}
	var l leaseList
	r.decode(t, &l)
	return l
}
