package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

func TestAcquireSendsContractBody(t *testing.T) {
	tests := []struct {
		name        string
		req         AcquireRequest
		status      int
		wantBody    map[string]any
		wantCreated bool
	}{
		{
			name:        "new grant",
			req:         AcquireRequest{Holder: "h1", TTL: 10 * time.Second},
			status:      201,
			wantBody:    map[string]any{"holder": "h1", "ttl": "10s"},
			wantCreated: true,
		},
		{
			name:     "already held, with wait and metadata",
			req:      AcquireRequest{Holder: "h1", TTL: 1500 * time.Millisecond, Wait: 30 * time.Second, Metadata: map[string]string{"zone": "a"}},
			status:   200,
			wantBody: map[string]any{"holder": "h1", "ttl": "1.5s", "wait": "30s", "metadata": map[string]any{"zone": "a"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := answeringServer(t, tt.status, testLease("scene-01"))
			c, _ := newTestClient(t, srv.URL)
			l, meta, err := c.Leases().Acquire(context.Background(), "scene-01", tt.req)
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			req := srv.requests()[0]
			if req.Method != http.MethodPut || req.Path != "/v1/leases/scene-01" {
				t.Errorf("request = %s %s, want PUT /v1/leases/scene-01", req.Method, req.Path)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(req.Body), &got); err != nil {
				t.Fatalf("body %q: %v", req.Body, err)
			}
			// Every acquisition carries the Client's lease secret.
			tt.wantBody["secret"] = c.LeaseSecret()
			if !reflect.DeepEqual(got, tt.wantBody) {
				t.Errorf("body = %v, want %v", got, tt.wantBody)
			}
			if meta.Created != tt.wantCreated {
				t.Errorf("Created = %v, want %v", meta.Created, tt.wantCreated)
			}
			if l.Token != 17 || l.Holder != "h1" {
				t.Errorf("lease = %+v, want holder h1 token 17", l)
			}
		})
	}
}

func TestAcquireWaitExtendsAttemptTimeout(t *testing.T) {
	c, _ := newTestClient(t, "127.0.0.1:1") // Timeout 5s
	tests := []struct {
		name string
		r    request
		want time.Duration
	}{
		{"plain", request{}, 5 * time.Second},
		{"acquire wait", request{wait: 30 * time.Second}, 35 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.attemptTimeout(&tt.r); got != tt.want {
				t.Errorf("attemptTimeout = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLeaseDecoding(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch r.URL.Path {
		case "/v1/leases/held":
			writeJSON(w, 200, testLease("held"))
		case "/v1/leases/free":
			writeJSON(w, 200, map[string]any{"key": "free", "holder": "h0", "token": 9, "ttl": "5s",
				"state": "free", "reason": "expired", "acquired_at": "2026-11-21T09:00:00Z", "modify_index": 40})
		}
	})
	c, _ := newTestClient(t, srv.URL)
	ctx := context.Background()

	held, _, err := c.Leases().Get(ctx, "held", nil)
	if err != nil {
		t.Fatalf("Get held: %v", err)
	}
	want := &LeaseInfo{
		Key: "held", Holder: "h1", Token: 17, TTL: 10 * time.Second, State: StateHeld,
		ExpiresIn: 9200 * time.Millisecond, HasExpiresIn: true,
		AcquiredAt: time.Date(2026, 11, 21, 10, 0, 0, 123e6, time.UTC),
		RenewedAt:  time.Date(2026, 11, 21, 10, 0, 5, 1e6, time.UTC),
		Metadata:   map[string]string{"zone": "a"}, ModifyIndex: 42,
	}
	if !reflect.DeepEqual(held, want) {
		t.Errorf("held lease = %+v\nwant %+v", held, want)
	}
	if !held.Held() {
		t.Errorf("Held() = false for a held lease")
	}

	free, _, err := c.Leases().Get(ctx, "free", nil)
	if err != nil {
		t.Fatalf("Get free: %v", err)
	}
	if free.Held() || free.HasExpiresIn || free.ExpiresIn != 0 || !free.RenewedAt.IsZero() || free.Reason != ReasonExpired {
		t.Errorf("free lease = %+v, want free, no expires_in, no renewed_at, reason expired", free)
	}
}

func TestLeaseJSONRoundTrip(t *testing.T) {
	in := LeaseInfo{Key: "a/b", Holder: "h", Token: 3, TTL: 2 * time.Second, State: StateHeld,
		ExpiresIn: 0, HasExpiresIn: true, AcquiredAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), ModifyIndex: 8}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out LeaseInfo
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("Unmarshal(%s): %v", data, err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip of %s = %+v, want %+v", data, out, in)
	}
}

func TestLeaseDecodingRejectsBadDurations(t *testing.T) {
	var l LeaseInfo
	if err := json.Unmarshal([]byte(`{"key":"k","ttl":"ten seconds"}`), &l); err == nil {
		t.Errorf("decoding a ttl of %q succeeded, want an error", "ten seconds")
	}
}

func TestRenewAndRelease(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.Method == http.MethodDelete {
			w.WriteHeader(204)
			return
		}
		writeJSON(w, 200, testLease("partitions/17"))
	})
	c, _ := newTestClient(t, srv.URL)
	ctx := context.Background()
	if _, _, err := c.Leases().Renew(ctx, "partitions/17", "h1", 17); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if _, err := c.Leases().Release(ctx, "partitions/17", "h1", 17); err != nil {
		t.Fatalf("Release: %v", err)
	}
	reqs := srv.requests()
	if r := reqs[0]; r.Method != "POST" || r.Path != "/v1/renew/partitions/17" || r.Body != `{"holder":"h1","token":17,"secret":"`+c.LeaseSecret()+`"}` {
		t.Errorf("renew request = %s %s %s", r.Method, r.Path, r.Body)
	}
	// The secret travels in the body, never in the URL.
	if r := reqs[1]; r.Method != "DELETE" || r.Path != "/v1/leases/partitions/17" || len(r.Query) != 0 ||
		r.Body != `{"holder":"h1","token":17,"secret":"`+c.LeaseSecret()+`"}` {
		t.Errorf("release request = %s %s %v %s", r.Method, r.Path, r.Query, r.Body)
	}
}

func TestRenewMany(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, map[string]any{"results": []any{
			map[string]any{"key": "a", "token": 1, "ok": true, "lease": testLease("a")},
			map[string]any{"key": "b", "token": 2, "ok": false, "error": "lease_lost", "reason": "superseded"},
		}})
	})
	c, _ := newTestClient(t, srv.URL)
	res, meta, err := c.Leases().RenewMany(context.Background(), "h1", []LeaseRef{{Key: "a", Token: 1}, {Key: "b", Token: 2}})
	if err != nil {
		t.Fatalf("RenewMany: %v", err)
	}
	if meta.SentAt.IsZero() {
		t.Errorf("SentAt is zero")
	}
	if got, want := srv.requests()[0].Body, `{"holder":"h1","secret":"`+c.LeaseSecret()+`","leases":[{"key":"a","token":1},{"key":"b","token":2}]}`; got != want {
		t.Errorf("body = %s, want %s", got, want)
	}
	if len(res) != 2 {
		t.Fatalf("got %d results, want 2", len(res))
	}
	if res[0].Err != nil || res[0].Lease == nil || res[0].Key != "a" {
		t.Errorf("result a = %+v, want renewed", res[0])
	}
	var ae *APIError
	if !errors.Is(res[1].Err, ErrLeaseLost) || !errors.As(res[1].Err, &ae) || ae.Reason != ReasonSuperseded || res[1].Lease != nil {
		t.Errorf("result b = %+v, want ErrLeaseLost with reason superseded", res[1])
	}
}

// RenewManyBrief asks for the brief answer and reads one: every result
// without its lease.
func TestRenewManyBrief(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, map[string]any{"results": []any{
			map[string]any{"key": "a", "token": 1, "ok": true},
			map[string]any{"key": "b", "token": 2, "ok": false, "error": "lease_lost", "reason": "expired"},
		}})
	})
	c, _ := newTestClient(t, srv.URL)
	res, _, err := c.Leases().RenewManyBrief(context.Background(), "h1", []LeaseRef{{Key: "a", Token: 1}, {Key: "b", Token: 2}})
	if err != nil {
		t.Fatalf("RenewManyBrief: %v", err)
	}
	if got, want := srv.requests()[0].Body, `{"holder":"h1","secret":"`+c.LeaseSecret()+`","leases":[{"key":"a","token":1},{"key":"b","token":2}],"brief":true}`; got != want {
		t.Errorf("body = %s, want %s", got, want)
	}
	if len(res) != 2 || res[0].Err != nil || res[0].Lease != nil || !errors.Is(res[1].Err, ErrLeaseLost) {
		t.Errorf("results = %+v, want a renewed without lease, b lost", res)
	}
}

func TestRenewManyRefusesBadBatch(t *testing.T) {
	c, _ := newTestClient(t, "127.0.0.1:1")
	for _, n := range []int{0, MaxRenewBatch + 1} {
		_, _, err := c.Leases().RenewMany(context.Background(), "h1", make([]LeaseRef, n))
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("RenewMany of %d leases: err = %v, want ErrInvalid", n, err)
		}
	}
}

func TestReadsPassQueryOptions(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set(HeaderIndex, "57")
		w.Header().Set(HeaderLastContact, "12")
		w.Header().Set(HeaderKnownLeader, "true")
		if r.URL.Path == "/v1/leases" {
			writeJSON(w, 200, map[string]any{"leases": []any{testLease("a"), testLease("b")}, "index": 57})
			return
		}
		writeJSON(w, 200, testLease("k"))
	})
	c, _ := newTestClient(t, srv.URL)
	ctx := context.Background()

	_, meta, err := c.Leases().Get(ctx, "k", &QueryOptions{Stale: true, WaitIndex: 42, WaitTime: 30 * time.Second})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if meta.Index != 57 || meta.LastContact != 12*time.Millisecond || !meta.KnownLeader {
		t.Errorf("meta = %+v, want index 57, last contact 12ms, known leader", meta)
	}
	for _, tt := range []struct {
		ms   float64
		want time.Duration
	}{{0, 0}, {12, 12 * time.Millisecond}, {-1, -1}} {
		if got := wire.LastContact(tt.ms); got != tt.want {
			t.Errorf("wire.LastContact(%v) = %v, want %v", tt.ms, got, tt.want)
		}
	}
	list, _, err := c.Leases().List(ctx, &ListOptions{Prefix: "partitions/", State: StateHeld, Holder: "h1"}, &QueryOptions{WaitIndex: 57})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list) != 2 || list[1].Key != "b" {
		t.Errorf("list = %+v, want leases a and b", list)
	}

	reqs := srv.requests()
	tests := []struct {
		name  string
		req   seenRequest
		path  string
		query map[string]string
	}{
		{"get", reqs[0], "/v1/leases/k", map[string]string{"stale": "true", "index": "42", "wait": "30s"}},
		{"list", reqs[1], "/v1/leases", map[string]string{"prefix": "partitions/", "state": "held", "holder": "h1", "index": "57"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.req.Path != tt.path {
				t.Errorf("path = %s, want %s", tt.req.Path, tt.path)
			}
			if len(tt.req.Query) != len(tt.query) {
				t.Errorf("query = %v, want %v", tt.req.Query, tt.query)
			}
			for k, v := range tt.query {
				if got := tt.req.Query.Get(k); got != v {
					t.Errorf("query %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestBlockingReadExtendsAttemptTimeout(t *testing.T) {
	c, _ := newTestClient(t, "127.0.0.1:1") // Timeout 5s
	tests := []struct {
		name string
		q    *QueryOptions
		want time.Duration
	}{
		{"no options", nil, 5 * time.Second},
		{"stale only", &QueryOptions{Stale: true}, 5 * time.Second},
		{"index, server default wait", &QueryOptions{WaitIndex: 3}, 5*time.Second + 5*time.Minute},
		{"index and wait", &QueryOptions{WaitIndex: 3, WaitTime: 30 * time.Second}, 35 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := request{wait: tt.q.apply(map[string]string{})}
			if got := c.attemptTimeout(&r); got != tt.want {
				t.Errorf("attemptTimeout = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRevokeAndKeyPaths(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.WriteHeader(204)
	})
	c, _ := newTestClient(t, srv.URL)
	ctx := context.Background()
	if _, err := c.Leases().Revoke(ctx, "elections/scheduler"); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if r := srv.requests()[0]; r.Method != "POST" || r.Path != "/v1/revoke/elections/scheduler" {
		t.Errorf("revoke request = %s %s", r.Method, r.Path)
	}
	if _, _, err := c.Leases().RevokeKey(ctx, "scene-01", WithForce()); err != nil {
		t.Fatalf("RevokeKey: %v", err)
	}
	if r := srv.requests()[1]; r.Path != "/v1/revoke/scene-01" || r.Query.Encode() != "force=true" {
		t.Errorf("forced revoke request = %s ?%s", r.Path, r.Query)
	}
	if _, _, err := c.Leases().RevokeHolder(ctx, "w-1"); err != nil {
		t.Fatalf("RevokeHolder: %v", err)
	}
	if r := srv.requests()[2]; r.Path != "/v1/revoke" || r.Query.Encode() != "holder=w-1" {
		t.Errorf("revoke by holder request = %s ?%s", r.Path, r.Query)
	}

	tests := []struct{ key, want string }{
		{"scene-01", "/v1/leases/scene-01"},
		{"a/b:c.d_e", "/v1/leases/a/b:c.d_e"},
		{"sp ace?x", "/v1/leases/sp%20ace%3Fx"},
	}
	for _, tt := range tests {
		if got, err := leasePath("/v1/leases/", tt.key); err != nil || got != tt.want {
			t.Errorf("leasePath(%q) = %q, %v; want %q", tt.key, got, err, tt.want)
		}
	}
	if _, _, err := c.Leases().Get(ctx, "", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("Get of an empty key: err = %v, want ErrInvalid", err)
	}
}

// A revoke whose outcome is unknown is not retried: a second revoke could
// free a lease granted to someone else after the first one.
func TestRevokeIsNotRetriedAfterUnknownOutcome(t *testing.T) {
	srv := failingServer(t, http.StatusServiceUnavailable, wire.CodeLeadershipLost, "outcome unknown")
	c, _ := newTestClient(t, srv.URL)
	_, err := c.Leases().Revoke(context.Background(), "scene-01")
	if !errors.Is(err, ErrLeadershipLost) {
		t.Fatalf("err = %v, want ErrLeadershipLost", err)
	}
	if n := srv.count(); n != 1 {
		t.Fatalf("revoke sent %d times, want once", n)
	}
}

// A 404 for a key not created yet carries the index to block on.
func TestNotFoundCarriesIndex(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set(HeaderIndex, "42")
		writeError(w, http.StatusNotFound, wire.CodeNotFound, "never seen")
	})
	c, _ := newTestClient(t, srv.URL)
	_, _, err := c.Leases().Get(context.Background(), "later", nil)
	var ae *APIError
	if !errors.As(err, &ae) || !errors.Is(err, ErrNotFound) || ae.Index != 42 {
		t.Fatalf("err = %v (index %v), want ErrNotFound with index 42", err, ae)
	}
}
