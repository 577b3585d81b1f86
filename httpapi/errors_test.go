package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

// Every error of package cluster answers with the status and code that
// docs/http-api.md gives it; clients map the code back to the sentinel.
func TestWriteError(t *testing.T) {
	held := &fsm.Lease{Key: "k", Holder: "other", Token: 7, TTL: 10 * time.Second, Held: true, ModifyIndex: 12}
	for _, tc := range []struct {
		name       string
		err        error
		wantStatus int
		wantCode   string
		wantField  string
		wantReason string
		wantRetry  bool
		wantLease  *client.LeaseInfo
	}{
		{name: "held", err: &cluster.HeldError{Lease: held}, wantStatus: 409, wantCode: "held",
			wantLease: &client.LeaseInfo{Key: "k", Holder: "other", Token: 7, TTL: 10 * time.Second, State: "held", ModifyIndex: 12}},
		{name: "held wrapped", err: fmt.Errorf("acquire: %w", &cluster.HeldError{Lease: held}), wantStatus: 409, wantCode: "held",
			wantLease: &client.LeaseInfo{Key: "k", Holder: "other", Token: 7, TTL: 10 * time.Second, State: "held", ModifyIndex: 12}},
		{name: "lost released", err: &cluster.LostError{Key: "k", Reason: wire.ReasonReleased}, wantStatus: 404, wantCode: "lease_lost", wantReason: "released"},
		{name: "lost superseded", err: &cluster.LostError{Key: "k", Reason: wire.ReasonSuperseded}, wantStatus: 404, wantCode: "lease_lost", wantReason: "superseded"},
		{name: "invalid ttl", err: &cluster.InvalidError{Field: "ttl", Err: errors.New("1ms is below 300ms")}, wantStatus: 400, wantCode: "invalid_ttl", wantField: "ttl"},
		{name: "invalid key", err: &cluster.InvalidError{Field: "key", Err: fsm.ErrInvalidKey}, wantStatus: 400, wantCode: "invalid_key", wantField: "key"},
		{name: "invalid holder", err: &cluster.InvalidError{Field: "holder", Err: errors.New("empty")}, wantStatus: 400, wantCode: "invalid_holder", wantField: "holder"},
		{name: "invalid wait", err: &cluster.InvalidError{Field: "wait", Err: errors.New("too long")}, wantStatus: 400, wantCode: "invalid_wait", wantField: "wait"},
		{name: "invalid token", err: &cluster.InvalidError{Field: "token", Err: errors.New("zero")}, wantStatus: 400, wantCode: "invalid_token", wantField: "token"},
		{name: "invalid metadata", err: &cluster.InvalidError{Field: "metadata", Err: errors.New("17 entries")}, wantStatus: 400, wantCode: "invalid_metadata", wantField: "metadata"},
		{name: "invalid other field", err: &cluster.InvalidError{Field: "leases", Err: errors.New("0 leases")}, wantStatus: 400, wantCode: "invalid_body", wantField: "leases"},
		{name: "not found", err: fmt.Errorf("key %q: %w", "k", cluster.ErrNotFound), wantStatus: 404, wantCode: "not_found"},
		{name: "overloaded", err: cluster.ErrOverloaded, wantStatus: 429, wantCode: "overloaded", wantRetry: true},
		{name: "leadership lost", err: fmt.Errorf("%w: %w", cluster.ErrLeadershipLost, errors.New("raft: leadership lost")), wantStatus: 503, wantCode: "leadership_lost", wantRetry: true},
		{name: "not leader", err: cluster.ErrNotLeader, wantStatus: 503, wantCode: "no_leader", wantRetry: true},
		{name: "not ready", err: cluster.ErrNotReady, wantStatus: 503, wantCode: "no_leader", wantRetry: true},
		{name: "shutting down", err: cluster.ErrShutdown, wantStatus: 503, wantCode: "no_leader", wantRetry: true},
		{name: "deadline", err: fmt.Errorf("apply: %w", context.DeadlineExceeded), wantStatus: 504, wantCode: "timeout"},
		{name: "raft gave up", err: fmt.Errorf("transfer leadership: %w: %w", cluster.ErrTimeout, errors.New("leadership transfer timeout")), wantStatus: 504, wantCode: "timeout"},
		{name: "api error", err: badRequest("invalid_index", "index", "index: not a number"), wantStatus: 400, wantCode: "invalid_index", wantField: "index"},
		{name: "unknown", err: errors.New("disk on fire"), wantStatus: 500, wantCode: "internal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			writeError(rec, tc.err)
			r := reply{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
			r.wantStatus(t, tc.err.Error(), tc.wantStatus)
			e := r.apiErr(t)
			if e.Error != tc.wantCode || e.Field != tc.wantField || e.Reason != tc.wantReason {
				t.Errorf("got code %q field %q reason %q, want %q %q %q", e.Error, e.Field, e.Reason, tc.wantCode, tc.wantField, tc.wantReason)
			}
			if e.Message != tc.err.Error() {
				t.Errorf("got message %q, want %q", e.Message, tc.err.Error())
			}
			if got := r.header.Get("Retry-After"); (got != "") != tc.wantRetry {
				t.Errorf("got Retry-After %q, want one: %v", got, tc.wantRetry)
			}
			switch {
			case tc.wantLease == nil && e.Lease != nil:
				t.Errorf("got lease %+v, want none", e.Lease)
			case tc.wantLease != nil && e.Lease == nil:
				t.Errorf("got no lease, want %+v", tc.wantLease)
			case tc.wantLease != nil && fmt.Sprintf("%+v", *e.Lease) != fmt.Sprintf("%+v", *tc.wantLease):
				t.Errorf("got lease %+v, want %+v", *e.Lease, *tc.wantLease)
			}
		})
	}
}

// A request whose client went away gets no answer at all.
func TestWriteErrorCanceled(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"bare", context.Canceled},
		{"wrapped", fmt.Errorf("verify: %w", context.Canceled)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			writeError(rec, tc.err)
			if rec.Body.Len() != 0 || len(rec.Header()) != 0 {
				t.Errorf("got header %v body %q, want nothing written", rec.Header(), rec.Body)
			}
		})
	}
}

// decodeBody names what is wrong with a body, with the code of the field
// to blame when there is one.
func TestDecodeBody(t *testing.T) {
	big := `{"holder":"h","ttl":"10s","metadata":{"x":"` + strings.Repeat("a", MaxBodyBytes) + `"}}`
	for _, tc := range []struct {
		name      string
		body      string
		want      wire.AcquireBody
		wantCode  string // "" for success
		wantField string
	}{
		{name: "ok", body: `{"holder":"h","ttl":"10s","wait":"1s","metadata":{"zone":"a"}}`,
			want: wire.AcquireBody{Holder: "h", TTL: "10s", Wait: "1s", Metadata: map[string]string{"zone": "a"}}},
		{name: "ok with trailing whitespace", body: "{\"holder\":\"h\",\"ttl\":\"10s\"}\n\t ", want: wire.AcquireBody{Holder: "h", TTL: "10s"}},
		{name: "unknown field", body: `{"holder":"h","ttl":"10s","lease_time":"5s"}`, wantCode: "invalid_body", wantField: "lease_time"},
		{name: "trailing object", body: `{"holder":"h","ttl":"10s"} {"holder":"x"}`, wantCode: "invalid_body", wantField: "body"},
		{name: "trailing brace", body: `{"holder":"h","ttl":"10s"}}`, wantCode: "invalid_body", wantField: "body"},
		{name: "trailing bracket", body: `{"holder":"h","ttl":"10s"}]`, wantCode: "invalid_body", wantField: "body"},
		{name: "trailing garbage", body: `{"holder":"h","ttl":"10s"}x`, wantCode: "invalid_body", wantField: "body"},
		{name: "empty", body: "", wantCode: "invalid_body", wantField: "body"},
		{name: "not json", body: "holder=h", wantCode: "invalid_body", wantField: "body"},
		{name: "truncated", body: `{"holder":"h"`, wantCode: "invalid_body", wantField: "body"},
		{name: "too large", body: big, wantCode: "body_too_large", wantField: "body"},
		{name: "too large after the object", body: `{"holder":"h","ttl":"10s"}` + strings.Repeat(" ", MaxBodyBytes), wantCode: "body_too_large", wantField: "body"},
		{name: "ttl as number", body: `{"holder":"h","ttl":10}`, wantCode: "invalid_ttl", wantField: "ttl"},
		{name: "holder as number", body: `{"holder":1,"ttl":"10s"}`, wantCode: "invalid_holder", wantField: "holder"},
		{name: "metadata as list", body: `{"holder":"h","ttl":"10s","metadata":["a"]}`, wantCode: "invalid_metadata", wantField: "metadata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPut, "/v1/leases/k", strings.NewReader(tc.body))
			req.Body = http.MaxBytesReader(rec, req.Body, MaxBodyBytes)
			var got wire.AcquireBody
			err := decodeBody(req, &got)
			if tc.wantCode == "" {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tc.want) {
					t.Errorf("got %+v, want %+v", got, tc.want)
				}
				return
			}
			var api *apiError
			if !errors.As(err, &api) {
				t.Fatalf("got error %v (%T), want an *apiError", err, err)
			}
			if api.httpStatus() != http.StatusBadRequest || api.code != tc.wantCode || api.field != tc.wantField {
				t.Errorf("got status %d code %q field %q (%s), want 400 %q %q", api.httpStatus(), api.code, api.field, api.msg, tc.wantCode, tc.wantField)
			}
		})
	}
}

// The renew body's token is a number: a string names the token.
func TestDecodeBodyRenewToken(t *testing.T) {
	req := httptest.NewRequest(http.MethodPost, "/v1/renew/k", strings.NewReader(`{"holder":"h","token":"5"}`))
	var body wire.LeaseRefBody
	var api *apiError
	if err := decodeBody(req, &body); !errors.As(err, &api) || api.code != "invalid_token" || api.field != "token" {
		t.Fatalf("got %v, want invalid_token on field token", err)
	}
}

// Through the server, a bad body is answered 400 with the code, and nothing
// is acquired.
func TestBadBodyThroughServer(t *testing.T) {
	const path = "/v1/leases/body-test"
	tn := startNode(t)
	checkRefusals(t, tn.url, []refusal{
		{"unknown field", http.MethodPut, path, `{"holder":"h","ttl":"10s","owner":"x"}`, 400, "invalid_body", "owner", ""},
		{"trailing data", http.MethodPut, path, `{"holder":"h","ttl":"10s"}}`, 400, "invalid_body", "body", ""},
		{"empty", http.MethodPut, path, "", 400, "invalid_body", "body", ""},
		{"too large", http.MethodPut, path, `{"holder":"h","ttl":"10s","metadata":{"x":"` + strings.Repeat("a", MaxBodyBytes) + `"}}`, 400, "body_too_large", "body", ""},
		{"ttl as number", http.MethodPut, path, `{"holder":"h","ttl":10}`, 400, "invalid_ttl", "ttl", ""},
		{"ttl missing", http.MethodPut, path, `{"holder":"h"}`, 400, "invalid_ttl", "ttl", ""},
		{"ttl below the minimum", http.MethodPut, path, `{"holder":"h","ttl":"1ms"}`, 400, "invalid_ttl", "ttl", ""},
		{"wait negative", http.MethodPut, path, `{"holder":"h","ttl":"10s","wait":"-1s"}`, 400, "invalid_wait", "wait", ""},
		{"holder empty", http.MethodPut, path, `{"holder":"","ttl":"10s"}`, 400, "invalid_holder", "holder", ""},
	})
	r := do(t, http.MethodGet, tn.url+path, "")
	r.wantStatus(t, "get after refused acquires", http.StatusNotFound)
}
