package client

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// fakeTenure is a small stateful tenure server for the tests of the
// keep-alive, elections and fencing: acquire (without queueing), renew one
// and many, release, revoke-by-test, and read with the index headers. Tests
// inject failures through its fields, under mu.
type fakeTenure struct {
	*fakeServer
	routes *http.ServeMux

	mu     sync.Mutex
	token  uint64
	index  uint64
	leases map[string]*fakeLease

	// renewFault, when set, answers every renew request (one or many)
	// instead of the fake: with an error, or not at all.
	renewFault func(w http.ResponseWriter, r *http.Request)
	// renewDelay delays the answer of every successful renewal.
	renewDelay time.Duration
	// acquireDelay delays the answer of every acquire, after the grant.
	acquireDelay time.Duration
	// renews records the renew requests, one or many.
	renews []fakeRenew
	// refuseLoads answers a bulk renewal that reports loads as a server
	// older than load reports does: 400 invalid_body, unknown field.
	refuseLoads bool
	// changed is closed and replaced when a lease changes (blocking reads).
	changed chan struct{}
}

// fakeLease is the state of one key.
type fakeLease struct {
	holder   string
	token    uint64
	ttl      string
	held     bool
	reason   string // why it is free, or why renewals are refused
	metadata map[string]string
	index    uint64
	lostWith string // while held: renewals are refused with this reason
	secret   string // the acquirer's lease secret
}

// fakeRenew is one renew request the fake received.
type fakeRenew struct {
	At     time.Time
	Bulk   bool
	Holder string
	Keys   []string
	OK     bool // answered with every lease renewed
	// Loads are the loads a bulk renewal reported, by key, and Total the
	// holder's.
	Loads map[string]float64
	Total *float64
}

func newFakeTenure(t *testing.T) *fakeTenure {
	t.Helper()
	f := &fakeTenure{leases: map[string]*fakeLease{}, index: 1, changed: make(chan struct{}), routes: http.NewServeMux()}
	f.routes.HandleFunc("PUT /v1/leases/{key...}", keyed(f.acquire))
	f.routes.HandleFunc("POST /v1/renew", f.renewMany)
	f.routes.HandleFunc("POST /v1/renew/{key...}", keyed(f.renewOne))
	f.routes.HandleFunc("DELETE /v1/leases/{key...}", keyed(f.release))
	f.routes.HandleFunc("GET /v1/leases", f.list)
	f.routes.HandleFunc("GET /v1/leases/{key...}", keyed(f.get))
	f.routes.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, 404, wire.CodeNotFound, "no route "+r.Method+" "+r.URL.Path)
	})
	f.fakeServer = newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		// fakeServer has read the body into its record.
		r.Body = io.NopCloser(strings.NewReader(f.fakeServer.requests()[n-1].Body))
		f.serve(w, r)
	})
	return f
}

func (f *fakeTenure) serve(w http.ResponseWriter, r *http.Request) { f.routes.ServeHTTP(w, r) }

// keyed serves a route whose path ends in {key...} with h, given the key.
func keyed(h func(w http.ResponseWriter, r *http.Request, key string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { h(w, r, r.PathValue("key")) }
}

// wire is the JSON of a lease; f.mu held.
func (f *fakeTenure) wire(key string, l *fakeLease) map[string]any {
	m := map[string]any{"key": key, "holder": l.holder, "token": l.token, "ttl": l.ttl,
		"state": "free", "modify_index": l.index, "metadata": l.metadata}
	if l.held {
		m["state"] = "held"
	} else {
		m["reason"] = l.reason
	}
	return m
}

// changeLocked records a change of key; f.mu held.
func (f *fakeTenure) changeLocked(l *fakeLease) {
	f.index++
	l.index = f.index
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeTenure) acquire(w http.ResponseWriter, r *http.Request, key string) {
	var body struct {
		Holder   string            `json:"holder"`
		TTL      string            `json:"ttl"`
		Wait     string            `json:"wait"`
		Metadata map[string]string `json:"metadata"`
		Secret   string            `json:"secret"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, 400, wire.CodeInvalidBody, err.Error())
		return
	}
	if body.Secret == "" {
		writeError(w, 400, wire.CodeInvalidSecret, "secret: the fake wants one")
		return
	}
	wait, _ := time.ParseDuration(body.Wait)
	waitEnd := time.After(wait)
	f.mu.Lock()
	for {
		// A blocking acquire waits for the key to change (not FIFO: enough
		// for one waiter).
		l := f.leases[key]
		if wait <= 0 || l == nil || !l.held || l.holder == body.Holder && l.secret == body.Secret {
			break
		}
		changed := f.changed
		f.mu.Unlock()
		switch awaitChange(r, changed, waitEnd) {
		case requestEnded:
			return
		case waitEnded:
			wait = 0
		}
		f.mu.Lock()
	}
	l := f.leases[key]
	status := http.StatusOK
	switch {
	case l != nil && l.held && (l.holder != body.Holder || l.secret != body.Secret):
		out := map[string]any{"error": wire.CodeHeld, "message": "held by " + l.holder, "lease": f.wire(key, l)}
		f.mu.Unlock()
		writeJSON(w, http.StatusConflict, out)
		return
	case l == nil || !l.held:
		if l == nil {
			l = &fakeLease{}
			f.leases[key] = l
		}
		f.token++
		*l = fakeLease{holder: body.Holder, token: f.token, ttl: body.TTL, held: true, metadata: body.Metadata, secret: body.Secret}
		f.changeLocked(l)
		status = http.StatusCreated
	case body.Metadata != nil:
		// Kept by its holder: new metadata replaces the old.
		l.metadata = body.Metadata
		f.changeLocked(l)
	}
	out := f.wire(key, l)
	out["secret"] = body.Secret
	delay := f.acquireDelay
	f.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	writeJSON(w, status, out)
}

func (f *fakeTenure) renewMany(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Holder string     `json:"holder"`
		Secret string     `json:"secret"`
		Leases []LeaseRef `json:"leases"`
		Load   *float64   `json:"load"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, 400, wire.CodeInvalidBody, err.Error())
		return
	}
	keys := make([]string, len(body.Leases))
	rec := fakeRenew{At: time.Now(), Bulk: true, Holder: body.Holder, Total: body.Load}
	for i, l := range body.Leases {
		keys[i] = l.Key
		if l.Load != nil {
			if rec.Loads == nil {
				rec.Loads = map[string]float64{}
			}
			rec.Loads[l.Key] = *l.Load
		}
	}
	rec.Keys = keys
	f.mu.Lock()
	refuse := f.refuseLoads && (rec.Loads != nil || rec.Total != nil)
	if refuse {
		f.renews = append(f.renews, rec)
	}
	f.mu.Unlock()
	if refuse {
		writeJSON(w, 400, map[string]any{"error": wire.CodeInvalidBody, "field": "load", "message": `json: unknown field "load"`})
		return
	}
	if f.fault(w, r, rec) {
		return
	}
	f.mu.Lock()
	results := make([]map[string]any, len(body.Leases))
	rec.OK = true
	for i, ref := range body.Leases {
		res := map[string]any{"key": ref.Key, "token": ref.Token}
		if reason := f.renewLocked(ref.Key, body.Holder, body.Secret, ref.Token); reason == wire.CodeWrongSecret {
			res["ok"], res["error"] = false, wire.CodeWrongSecret
			rec.OK = false
		} else if reason != "" {
			res["ok"], res["error"], res["reason"] = false, wire.CodeLeaseLost, reason
			rec.OK = false
		} else {
			res["ok"], res["lease"] = true, f.wire(ref.Key, f.leases[ref.Key])
		}
		results[i] = res
	}
	f.renews = append(f.renews, rec)
	delay := f.renewDelay
	f.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	writeJSON(w, 200, map[string]any{"results": results})
}

func (f *fakeTenure) renewOne(w http.ResponseWriter, r *http.Request, key string) {
	var body wire.LeaseRefBody
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, 400, wire.CodeInvalidBody, err.Error())
		return
	}
	rec := fakeRenew{At: time.Now(), Holder: body.Holder, Keys: []string{key}}
	if f.fault(w, r, rec) {
		return
	}
	f.mu.Lock()
	reason := f.renewLocked(key, body.Holder, body.Secret, body.Token)
	rec.OK = reason == ""
	f.renews = append(f.renews, rec)
	var out map[string]any
	if reason == "" {
		out = f.wire(key, f.leases[key])
	}
	delay := f.renewDelay
	f.mu.Unlock()
	if reason == wire.CodeWrongSecret {
		writeJSON(w, 409, map[string]any{"error": wire.CodeWrongSecret, "field": "secret", "message": "secret: not the lease's"})
		return
	}
	if reason != "" {
		writeJSON(w, 404, map[string]any{"error": wire.CodeLeaseLost, "reason": reason, "message": "lease lost"})
		return
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	writeJSON(w, 200, out)
}

// fault records the request and answers it with renewFault, if set.
func (f *fakeTenure) fault(w http.ResponseWriter, r *http.Request, rec fakeRenew) bool {
	f.mu.Lock()
	fault := f.renewFault
	if fault != nil {
		f.renews = append(f.renews, rec)
	}
	f.mu.Unlock()
	if fault == nil {
		return false
	}
	fault(w, r)
	return true
}

// renewLocked returns "" when (key, holder, token) is held under secret,
// wire.CodeWrongSecret when it is held under another, or the reason it is
// lost; f.mu held.
func (f *fakeTenure) renewLocked(key, holder, secret string, token uint64) string {
	l := f.leases[key]
	switch {
	case l == nil:
		return ReasonUnknown
	case l.held && l.holder == holder && l.token == token && l.lostWith != "":
		return l.lostWith
	case l.held && l.holder == holder && l.token == token && l.secret != secret:
		return wire.CodeWrongSecret
	case l.held && l.holder == holder && l.token == token:
		return ""
	case l.token != token || l.holder != holder:
		return ReasonSuperseded
	}
	return l.reason
}

func (f *fakeTenure) release(w http.ResponseWriter, r *http.Request, key string) {
	var body wire.LeaseRefBody
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, 400, wire.CodeInvalidBody, err.Error())
		return
	}
	token := body.Token
	f.mu.Lock()
	l := f.leases[key]
	outcome := "gone"
	switch {
	case l != nil && token >= l.token && (token > l.token || l.holder != body.Holder):
		out := map[string]any{"error": wire.CodeNotHolder, "message": "not the holder", "lease": f.wire(key, l)}
		f.mu.Unlock()
		writeJSON(w, http.StatusConflict, out)
		return
	case l != nil && l.held && l.token == token && l.secret != body.Secret:
		f.mu.Unlock()
		writeJSON(w, http.StatusConflict, map[string]any{"error": wire.CodeWrongSecret, "field": "secret", "message": "secret: not the lease's"})
		return
	case l != nil && l.held && l.token == token:
		l.held, l.reason, l.lostWith = false, ReasonReleased, ""
		f.changeLocked(l)
		outcome = "freed"
	}
	f.mu.Unlock()
	w.Header().Set(HeaderRelease, outcome)
	w.WriteHeader(http.StatusNoContent)
}

// get answers a read; with ?index=N it blocks until the key's index (or,
// for a key never seen, the global index) passes N, or 5s pass.
func (f *fakeTenure) get(w http.ResponseWriter, r *http.Request, key string) {
	min, _ := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
	timeout := time.After(5 * time.Second)
	for {
		f.mu.Lock()
		l := f.leases[key]
		idx := f.index
		if l != nil {
			idx = l.index
		}
		changed := f.changed
		var out map[string]any
		if l != nil {
			out = f.wire(key, l)
		}
		f.mu.Unlock()
		if min == 0 || idx > min {
			w.Header().Set(HeaderIndex, strconv.FormatUint(idx, 10))
			if l == nil {
				writeError(w, 404, wire.CodeNotFound, "never seen")
				return
			}
			writeJSON(w, 200, out)
			return
		}
		switch awaitChange(r, changed, timeout) {
		case requestEnded:
			return
		case waitEnded:
			min = 0
		}
	}
}

// list answers a list of the keys with a prefix (no blocking).
func (f *fakeTenure) list(w http.ResponseWriter, r *http.Request) {
	prefix := r.URL.Query().Get("prefix")
	f.mu.Lock()
	var keys []string
	for k := range f.leases {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := []map[string]any{}
	for _, k := range keys {
		out = append(out, f.wire(k, f.leases[k]))
	}
	idx := f.index
	f.mu.Unlock()
	writeJSON(w, 200, map[string]any{"leases": out, "index": idx})
}

// set changes the fake's state under its lock.
func (f *fakeTenure) set(fn func(f *fakeTenure)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// revoke frees key as an operator would; the holder's next renewal is
// refused with reason revoked.
func (f *fakeTenure) revoke(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l := f.leases[key]; l != nil {
		l.held, l.reason, l.lostWith = false, ReasonRevoked, ""
		f.changeLocked(l)
	}
}

// lease returns a copy of key's state.
func (f *fakeTenure) lease(key string) fakeLease {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l := f.leases[key]; l != nil {
		return *l
	}
	return fakeLease{}
}

// renewRequests returns a copy of the renew requests received.
func (f *fakeTenure) renewRequests() []fakeRenew {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRenew(nil), f.renews...)
}

// newLeaseClient returns a client of addr with real backoff waits, short
// enough for leases of a second.
func newLeaseClient(t *testing.T, addr string) *Client {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Addresses = []string{addr}
	cfg.Timeout = 2 * time.Second
	cfg.RetryMax = 2
	cfg.RetryBaseDelay = 10 * time.Millisecond
	cfg.RetryMaxDelay = 40 * time.Millisecond
	cfg.Holder = "h1"
	cfg.DisableStream = true // fakeTenure counts HTTP requests (newRecordingClient)
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.keep.scale = func() float64 { return 1 }
	t.Cleanup(func() {
		// Every test releases or loses its leases; the renewer must be gone.
		waitUntil(t, 5*time.Second, "the renewer goroutine to end", func() bool { return !c.keep.isRunning() })
	})
	return c
}

// hang is a renewFault that answers nothing until the client gives up.
func hang(w http.ResponseWriter, r *http.Request) {
	<-r.Context().Done()
}

// unavailable is a renewFault that answers 503 no_leader.
func unavailable(w http.ResponseWriter, r *http.Request) {
	writeError(w, 503, wire.CodeNoLeader, "no leader")
}

// resetConn is a renewFault that closes the connection without answering.
func resetConn(w http.ResponseWriter, r *http.Request) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("no hijacker")
	}
	if conn, _, err := hj.Hijack(); err == nil {
		conn.Close()
	}
}

// awaited is what ended an awaitChange.
type awaited int

const (
	changeSeen awaited = iota
	waitEnded
	requestEnded
)

// awaitChange waits for changed to be closed, end to fire or r to end.
func awaitChange(r *http.Request, changed <-chan struct{}, end <-chan time.Time) awaited {
	select {
	case <-changed:
		return changeSeen
	case <-end:
		return waitEnded
	case <-r.Context().Done():
		return requestEnded
	}
}
