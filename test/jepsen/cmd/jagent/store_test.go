package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/test/jepsen/history"
)

// storeEnv is a store served by httptest, with its history file.
type storeEnv struct {
	st   *store
	srv  *httptest.Server
	path string
	rec  *recorder
}

func newStoreEnv(t *testing.T, fence bool) *storeEnv {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.jsonl")
	rec, err := openRecorder(path, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	st := newStore(fence, rec, hclog.NewNullLogger())
	srv := httptest.NewServer(st.handler())
	t.Cleanup(func() {
		srv.Close()
		rec.Close()
	})
	return &storeEnv{st: st, srv: srv, path: path, rec: rec}
}

// events closes the history and reads it back.
func (e *storeEnv) events(t *testing.T) []history.Event {
	t.Helper()
	e.rec.Close()
	evs, err := history.ReadFile(e.path)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// call sends method path with body and returns the status and body.
func (e *storeEnv) call(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestStoreFencesStaleTokens(t *testing.T) {
	env := newStoreEnv(t, true)
	sc := newStoreClient(env.srv.URL, 5*time.Second)
	ctx := context.Background()
	steps := []struct {
		w        regWrite
		accepted bool
		current  int64
	}{
		{regWrite{Writer: "a", Token: 5, Base: 0, Value: 1}, true, 0},
		{regWrite{Writer: "b", Token: 3, Base: 0, Value: 9}, false, 1}, // stale: below 5
		{regWrite{Writer: "a", Token: 5, Base: 1, Value: 2}, true, 1},  // the same token again
		{regWrite{Writer: "c", Token: 7, Base: 2, Value: 3}, true, 2},
		{regWrite{Writer: "a", Token: 5, Base: 2, Value: 3}, false, 3}, // superseded by 7
	}
	for i, s := range steps {
		v, err := sc.write(ctx, "k/0", s.w)
		switch {
		case s.accepted && (err != nil || v.Value != s.w.Value):
			t.Fatalf("write %d %+v: got %+v, %v; want accepted", i, s.w, v, err)
		case !s.accepted && !errors.Is(err, errStaleToken):
			t.Fatalf("write %d %+v: got %+v, %v; want a stale-token refusal", i, s.w, v, err)
		}
	}
	v, err := sc.read(ctx, "k/0", "reader", 0)
	if err != nil || v != (regValue{Value: 3, Token: 7}) {
		t.Fatalf("read: got %+v, %v; want value 3 token 7", v, err)
	}
	code, body := env.call(t, http.MethodPost, "/v1/reg/k%2F0", `{"writer":"z","token":1,"base":0,"value":0}`)
	if code != http.StatusConflict || !strings.Contains(body, `"error":"stale_token"`) || !strings.Contains(body, `"highest":7`) {
		t.Fatalf("stale write: got %d %s; want 409 stale_token with highest 7", code, body)
	}

	evs := env.events(t)
	if len(evs) != len(steps)+2 {
		t.Fatalf("got %d events, want %d: %+v", len(evs), len(steps)+2, evs)
	}
	for i, s := range steps {
		e := evs[i]
		want := history.Event{T: e.T, Kind: history.StoreWrite, Proc: s.w.Writer, Key: "k/0", Token: s.w.Token,
			Base: s.w.Base, Value: s.w.Value, Current: s.current, Accepted: s.accepted}
		if e != want || e.T == 0 {
			t.Errorf("event %d: got %+v, want %+v", i, e, want)
		}
	}
	if e := evs[len(steps)]; e.Kind != history.StoreRead || e.Proc != "reader" || e.Value != 3 || e.Token != 0 || !e.Accepted {
		t.Errorf("read event: got %+v, want an accepted unfenced store-read by reader of value 3", e)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].T < evs[i-1].T {
			t.Errorf("event %d is timed before event %d", i, i-1)
		}
	}
}

func TestStoreWithoutFencingAcceptsEverything(t *testing.T) {
	env := newStoreEnv(t, false)
	sc := newStoreClient(env.srv.URL, 5*time.Second)
	ctx := context.Background()
	for _, w := range []regWrite{{Writer: "a", Token: 5, Value: 1}, {Writer: "b", Token: 3, Base: 1, Value: 2}} {
		if _, err := sc.write(ctx, "k", w); err != nil {
			t.Fatalf("write %+v: %v; want accepted without fencing", w, err)
		}
	}
	if v, err := sc.read(ctx, "k", "r", 0); err != nil || v != (regValue{Value: 2, Token: 5}) {
		t.Fatalf("read: got %+v, %v; want value 2, highest token still 5", v, err)
	}
	evs := env.events(t)
	if len(evs) != 3 || !evs[1].Accepted || evs[1].Current != 1 || evs[1].Token != 3 {
		t.Fatalf("events: %+v; want the stale write recorded as accepted", evs)
	}
}

// TestStoreBuildFencing checks the store as `jagent store` builds it: with
// fencing by default, without it under -tags jepsen_nofence.
func TestStoreBuildFencing(t *testing.T) {
	fencing := storeFencing(hclog.NewNullLogger())
	env := newStoreEnv(t, fencing)
	env.call(t, http.MethodPost, "/v1/reg/k", `{"writer":"a","token":5,"value":1}`)
	code, _ := env.call(t, http.MethodPost, "/v1/reg/k", `{"writer":"b","token":4,"base":1,"value":2}`)
	want := http.StatusConflict
	if !fencing {
		want = http.StatusOK
	}
	if code != want {
		t.Fatalf("stale write in this build (fencing=%v): status %d, want %d", fencing, code, want)
	}
	if code, body := env.call(t, http.MethodGet, "/healthz", ""); code != http.StatusOK || !strings.Contains(body, `"fencing":`) {
		t.Fatalf("healthz: %d %s", code, body)
	}
}

func TestStoreRejectsBadRequests(t *testing.T) {
	env := newStoreEnv(t, true)
	cases := []struct {
		name, method, path, body string
		want                     int
	}{
		{"not JSON", "POST", "/v1/reg/k", `{"writer":`, 400},
		{"unknown field", "POST", "/v1/reg/k", `{"writer":"a","token":1,"value":1,"extra":1}`, 400},
		{"trailing data", "POST", "/v1/reg/k", `{"writer":"a","token":1,"value":1} {}`, 400},
		{"token 0", "POST", "/v1/reg/k", `{"writer":"a","token":0,"value":1}`, 400},
		{"no token", "POST", "/v1/reg/k", `{"writer":"a","value":1}`, 400},
		{"negative token", "POST", "/v1/reg/k", `{"writer":"a","token":-1,"value":1}`, 400},
		{"no writer", "POST", "/v1/reg/k", `{"token":1,"value":1}`, 400},
		{"empty key", "POST", "/v1/reg/", `{"writer":"a","token":1,"value":1}`, 400},
		{"long key", "GET", "/v1/reg/" + strings.Repeat("k", maxStoreKey+1) + "?writer=a", "", 400},
		{"read without writer", "GET", "/v1/reg/k", "", 400},
		{"other method", "PUT", "/v1/reg/k", "", 405},
		{"healthz", "GET", "/healthz", "", 200},
	}
	for _, c := range cases {
		if code, body := env.call(t, c.method, c.path, c.body); code != c.want || !json.Valid([]byte(body)) {
			t.Errorf("%s: got %d %q, want %d with a JSON body", c.name, code, body, c.want)
		}
	}
	if evs := env.events(t); len(evs) != 0 {
		t.Fatalf("refused requests were recorded: %+v", evs)
	}
}

func TestStoreChangesNothingWithoutHistory(t *testing.T) {
	env := newStoreEnv(t, true)
	env.call(t, http.MethodPost, "/v1/reg/k", `{"writer":"a","token":2,"value":1}`)
	env.rec.Close()
	code, body := env.call(t, http.MethodPost, "/v1/reg/k", `{"writer":"a","token":3,"base":1,"value":2}`)
	if code != http.StatusInternalServerError || !strings.Contains(body, codeHistoryFail) {
		t.Fatalf("write with a closed history: got %d %s, want 500 %s", code, body, codeHistoryFail)
	}
	if code, _ := env.call(t, http.MethodGet, "/v1/reg/k?writer=r", ""); code != http.StatusInternalServerError {
		t.Fatalf("read with a closed history: got %d, want 500", code)
	}
	env.st.mu.Lock()
	got := *env.st.regs["k"]
	env.st.mu.Unlock()
	if got != (register{value: 1, highest: 2}) {
		t.Fatalf("state after an unrecorded write: %+v, want value 1 highest 2", got)
	}
}

// A read under a token is fenced like a write: an older token is refused,
// and a newer one shuts out writes of every older token before the new
// holder writes.
func TestStoreFencesReads(t *testing.T) {
	env := newStoreEnv(t, true)
	sc := newStoreClient(env.srv.URL, 2*time.Second)
	ctx := context.Background()
	if _, err := sc.write(ctx, "k", regWrite{Writer: "a", Token: 5, Base: 0, Value: 1}); err != nil {
		t.Fatalf("write under 5: %v", err)
	}
	if _, err := sc.read(ctx, "k", "b", 4); !errors.Is(err, errStaleToken) {
		t.Fatalf("read under 4 after 5: err %v, want a stale token", err)
	}
	if v, err := sc.read(ctx, "k", "c", 6); err != nil || v.Token != 6 {
		t.Fatalf("read under 6: got %+v, %v; want highest 6", v, err)
	}
	if _, err := sc.write(ctx, "k", regWrite{Writer: "a", Token: 5, Base: 1, Value: 2}); !errors.Is(err, errStaleToken) {
		t.Fatalf("write under 5 after a read under 6: err %v, want a stale token", err)
	}
}
