package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/test/jepsen/history"
)

const (
	leaseBody = `{"key":"k","holder":"r1-0","token":17,"ttl":"2s","state":"held","expires_in":"1.9s","modify_index":42}`
	freeBody  = `{"key":"k","holder":"r1-2","token":16,"state":"free","reason":"released"}`
	heldBody  = `{"error":"held","message":"k is held","lease":{"key":"k","holder":"r1-1","token":15,"state":"held"}}`
)

func errBody(code string) string {
	return fmt.Sprintf(`{"error":%q,"message":"m"}`, code)
}

func TestClassify(t *testing.T) {
	cases := []struct {
		f      string
		status int
		body   string
		want   history.Event
	}{
		// Answers that say what happened.
		{fAcquire, 201, leaseBody, history.Event{Kind: history.OK, Token: 17, Created: true, Holder: "r1-0"}},
		{fAcquire, 200, leaseBody, history.Event{Kind: history.OK, Token: 17, Holder: "r1-0"}},
		{fAcquire, 409, heldBody, history.Event{Kind: history.Fail, Err: "held", Holder: "r1-1", Token: 15}},
		{fRenew, 200, leaseBody, history.Event{Kind: history.OK, Token: 17}},
		{fRenew, 404, `{"error":"lease_lost","reason":"superseded"}`, history.Event{Kind: history.Fail, Err: "lease_lost", State: "superseded"}},
		{fRelease, 204, "", history.Event{Kind: history.OK}},
		{fRead, 200, leaseBody, history.Event{Kind: history.OK, State: "held", Holder: "r1-0", Token: 17}},
		{fRead, 200, freeBody, history.Event{Kind: history.OK, State: "free", Holder: "r1-2", Token: 16}},
		{fRead, 404, errBody("not_found"), history.Event{Kind: history.OK, State: "free"}},

		// Definite refusals.
		{fAcquire, 400, errBody("invalid_ttl"), history.Event{Kind: history.Fail, Err: "invalid_ttl"}},
		{fAcquire, 403, errBody("disabled"), history.Event{Kind: history.Fail, Err: "disabled"}},
		{fAcquire, 429, errBody("overloaded"), history.Event{Kind: history.Fail, Err: "overloaded"}},
		{fRenew, 429, "", history.Event{Kind: history.Fail, Err: "http_429"}},
		{fRelease, 400, errBody("invalid_token"), history.Event{Kind: history.Fail, Err: "invalid_token"}},
		{fRead, 404, "404 page not found", history.Event{Kind: history.Fail, Err: "http_404"}},
		{fRenew, 409, errBody("held"), history.Event{Kind: history.Fail, Err: "held"}},
		{fAcquire, 503, errBody("no_leader"), history.Event{Kind: history.Fail, Err: "no_leader"}},
		{fRead, 503, errBody("no_leader"), history.Event{Kind: history.Fail, Err: "no_leader"}},

		// Unknown outcomes.
		{fAcquire, 503, errBody("leadership_lost"), history.Event{Kind: history.Info, Err: "leadership_lost"}},
		{fRelease, 504, errBody("timeout"), history.Event{Kind: history.Info, Err: "timeout"}},
		{fRenew, 500, errBody("internal"), history.Event{Kind: history.Info, Err: "internal"}},
		{fAcquire, 502, "bad gateway", history.Event{Kind: history.Info, Err: "http_502"}},
		{fAcquire, 503, "", history.Event{Kind: history.Info, Err: "http_503"}},
		{fRelease, 200, "", history.Event{Kind: history.Info, Err: "unexpected_http_200"}},
		{fRead, 201, leaseBody, history.Event{Kind: history.Info, Err: "unexpected_http_201"}},
		{fAcquire, 302, "", history.Event{Kind: history.Info, Err: "http_302"}},
	}
	for _, c := range cases {
		if got := classify(c.f, c.status, []byte(c.body)); got != c.want {
			t.Errorf("%s %d %s:\n got %+v\nwant %+v", c.f, c.status, c.body, got, c.want)
		}
	}
	if got := classify(fAcquire, 201, []byte("{not json")); got.Kind != history.Info || !strings.HasPrefix(got.Err, "bad_answer") {
		t.Errorf("acquire 201 with a bad body: got %+v, want info bad_answer", got)
	}
}

func TestClassifyErr(t *testing.T) {
	// A port nobody listens on: the connection is refused, nothing was sent.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = http.Get("http://" + addr + "/v1/leases/k")
	if got := classifyErr(err); got.Kind != history.Fail || !strings.HasPrefix(got.Err, "dial: ") {
		t.Errorf("refused connection (%v): got %+v, want fail dial", err, got)
	}

	// A server that does not answer in time: the outcome is unknown.
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-stop }))
	defer hang.Close()
	defer close(stop) // before Close, which waits for the handler
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, hang.URL+"/v1/leases/k", strings.NewReader("{}"))
	_, err = hang.Client().Do(req)
	if got := classifyErr(err); got != (history.Event{Kind: history.Info, Err: "client_timeout"}) {
		t.Errorf("timeout (%v): got %+v, want info client_timeout", err, got)
	}

	if got := classifyErr(errors.New("connection reset by peer")); got.Kind != history.Info || !strings.HasPrefix(got.Err, "net: ") {
		t.Errorf("broken connection: got %+v, want info net", got)
	}
}

func TestRegOpRequests(t *testing.T) {
	type seen struct{ method, uri, body string }
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.RequestURI, string(b)}
	}))
	defer srv.Close()
	cases := []struct {
		op   regOp
		want seen
		inv  history.Event
	}{
		{regOp{f: fAcquire, key: "a/b c", holder: "r1-0", token: 9, ttl: int64(2 * time.Second)},
			seen{"PUT", "/v1/leases/a/b%20c", `{"holder":"r1-0","secret":"` + leaseSecret("r1-0") + `","ttl":"2s"}`},
			history.Event{Kind: history.Invoke, F: fAcquire, Key: "a/b c", Holder: "r1-0", TTL: int64(2 * time.Second)}},
		{regOp{f: fRenew, key: "k", holder: "r1-0", token: 9, ttl: 1},
			seen{"POST", "/v1/renew/k", `{"holder":"r1-0","secret":"` + leaseSecret("r1-0") + `","token":9}`},
			history.Event{Kind: history.Invoke, F: fRenew, Key: "k", Holder: "r1-0", Token: 9}},
		{regOp{f: fRelease, key: "k", holder: "r1&0", token: 9},
			seen{"DELETE", "/v1/leases/k?holder=r1%260&token=9&secret=" + leaseSecret("r1&0"), ""},
			history.Event{Kind: history.Invoke, F: fRelease, Key: "k", Holder: "r1&0", Token: 9}},
		{regOp{f: fRead, key: "k", holder: "r1-0", token: 9},
			seen{"GET", "/v1/leases/k", ""},
			history.Event{Kind: history.Invoke, F: fRead, Key: "k", Holder: "r1-0"}},
	}
	for _, c := range cases {
		req, err := c.op.request(context.Background(), srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		s := <-got
		if s.body != "" && !json.Valid([]byte(s.body)) {
			t.Errorf("%s: body %q is not JSON", c.op.f, s.body)
		}
		if s != c.want {
			t.Errorf("%s: sent %+v, want %+v", c.op.f, s, c.want)
		}
		if inv := c.op.invoke(); inv != c.inv {
			t.Errorf("%s: invoke %+v, want %+v", c.op.f, inv, c.inv)
		}
	}
}
