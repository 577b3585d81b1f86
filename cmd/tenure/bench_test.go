package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// leaseStore is a fake server that keeps leases in memory with the
// contract's acquire, renew, release and read semantics (no expiry).
type leaseStore struct {
	mu     sync.Mutex
	leases map[string]*storedLease
	token  uint64
	// conflicts counts acquisitions refused because another holder had
	// the key; bench clients must never conflict.
	conflicts int
}

type storedLease struct {
	holder string
	token  uint64
	held   bool
}

func newLeaseStore(t *testing.T) (*leaseStore, *httptest.Server) {
	t.Helper()
	s := &leaseStore{leases: map[string]*storedLease{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *leaseStore) serve(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Holder string `json:"holder"`
		Token  uint64 `json:"token"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	s.mu.Lock()
	defer s.mu.Unlock()
	lost := map[string]string{"error": "lease_lost", "message": "gone", "reason": "released"}
	switch {
	case r.Method == "PUT" && strings.HasPrefix(r.URL.Path, "/v1/leases/"):
		key := strings.TrimPrefix(r.URL.Path, "/v1/leases/")
		l := s.leases[key]
		if l != nil && l.held && l.holder != body.Holder {
			s.conflicts++
			writeJSON(w, 409, map[string]string{"error": "held", "message": "held"})
			return
		}
		if l != nil && l.held {
			writeJSON(w, 200, s.wire(key, l))
			return
		}
		s.token++
		l = &storedLease{holder: body.Holder, token: s.token, held: true}
		s.leases[key] = l
		writeJSON(w, 201, s.wire(key, l))
	case r.Method == "POST" && strings.HasPrefix(r.URL.Path, "/v1/renew/"):
		key := strings.TrimPrefix(r.URL.Path, "/v1/renew/")
		l := s.leases[key]
		if l == nil || !l.held || l.holder != body.Holder || l.token != body.Token {
			writeJSON(w, 404, lost)
			return
		}
		writeJSON(w, 200, s.wire(key, l))
	case r.Method == "DELETE":
		key := strings.TrimPrefix(r.URL.Path, "/v1/leases/")
		// The client sends holder, token and secret in the body.
		if l := s.leases[key]; l != nil && l.held && l.holder == body.Holder && l.token == body.Token {
			l.held = false
		}
		w.WriteHeader(204)
	case r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/v1/leases/"):
		key := strings.TrimPrefix(r.URL.Path, "/v1/leases/")
		l := s.leases[key]
		if l == nil {
			writeJSON(w, 404, map[string]string{"error": "not_found", "message": "never seen"})
			return
		}
		writeJSON(w, 200, s.wire(key, l))
	default:
		writeJSON(w, 404, map[string]string{"error": "not_found", "message": r.Method + " " + r.URL.Path})
	}
}

func (s *leaseStore) wire(key string, l *storedLease) map[string]any {
	state := "free"
	if l.held {
		state = "held"
	}
	return map[string]any{"key": key, "holder": l.holder, "token": l.token, "ttl": "10s", "state": state}
}

func TestBenchAgainstFakeCluster(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantOps []string // operations that must appear in the report
	}{
		{"mix", []string{"-op", "mix"}, []string{"acquire", "renew", "read", "release"}},
		{"renew only", []string{"-op", "renew"}, []string{"renew"}},
		{"acquire only", []string{"-op", "acquire", "-keys", "1"}, []string{"acquire", "release"}},
		{"stale reads", []string{"-op", "read", "-stale"}, []string{"read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, srv := newLeaseStore(t)
			args := append([]string{"bench", "-json", "-http-addr", srv.URL, "-clients", "4", "-keys", "3", "-requests", "400"}, tt.args...)
			got := mustRunCLI(t, args...)
			var rep benchReport
			if err := json.Unmarshal([]byte(got.stdout), &rep); err != nil {
				t.Fatalf("output is not the JSON report: %v\n%s", err, got.stdout)
			}
			var total uint64
			seen := map[string]bool{}
			for _, o := range rep.Ops {
				total += o.Count + o.Errors
				seen[o.Op] = true
				if o.Errors != 0 {
					t.Errorf("%s: %d errors %v, want none", o.Op, o.Errors, o.ErrorKinds)
				}
				if o.Count > 0 && (o.P50Ms <= 0 || o.P50Ms > o.P99Ms || o.P99Ms > o.P999Ms || o.P999Ms > o.MaxMs) {
					t.Errorf("%s: latencies p50 %v p99 %v p99.9 %v max %v are not ordered", o.Op, o.P50Ms, o.P99Ms, o.P999Ms, o.MaxMs)
				}
			}
			if total != 400 {
				t.Errorf("operations in the report = %d, want -requests 400", total)
			}
			for _, op := range tt.wantOps {
				if !seen[op] {
					t.Errorf("report lacks operation %s: %+v", op, rep.Ops)
				}
			}

			store.mu.Lock()
			defer store.mu.Unlock()
			if store.conflicts != 0 {
				t.Errorf("%d acquisitions conflicted, want none: clients have their own keys", store.conflicts)
			}
			keyRE := regexp.MustCompile(`^bench/` + rep.RunID + `/([0-3])/([0-2])$`)
			for key, l := range store.leases {
				m := keyRE.FindStringSubmatch(key)
				if m == nil {
					t.Errorf("key %q is not bench/<run>/<client>/<n>", key)
					continue
				}
				if want := fmt.Sprintf("bench-%s-%s", rep.RunID, m[1]); l.holder != want {
					t.Errorf("key %s held by %s, want %s", key, l.holder, want)
				}
				if l.held {
					t.Errorf("key %s is still held after the run, want it released", key)
				}
			}
		})
	}
}

func TestBenchTextReport(t *testing.T) {
	_, srv := newLeaseStore(t)
	got := mustRunCLI(t, "bench", "-http-addr", srv.URL, "-clients", "2", "-requests", "50", "-op", "renew")
	for _, want := range []string{"bench run ", "OP", "P99.9", "renew", "total"} {
		if !strings.Contains(got.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, got.stdout)
		}
	}
}

func TestBenchFailsWhenNothingSucceeds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 400, map[string]string{"error": "invalid_ttl", "message": "ttl below min-ttl", "field": "ttl"})
	}))
	t.Cleanup(srv.Close)
	got := runCLI(t, "bench", "-http-addr", srv.URL, "-clients", "2", "-requests", "10", "-op", "acquire")
	if got.code != exitError || !strings.Contains(got.stderr, "no operation succeeded") {
		t.Errorf("exit code %d, stderr %q; want 1 and no operation succeeded", got.code, got.stderr)
	}
	if !strings.Contains(got.stdout, "invalid_ttl=10") {
		t.Errorf("report lacks the error kinds:\n%s", got.stdout)
	}
}
