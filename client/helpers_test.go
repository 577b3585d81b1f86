package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// seenRequest is a request as a fake server received it.
type seenRequest struct {
	Method string
	Path   string
	Query  url.Values
	Body   string
	At     time.Time // when the server received it
}

// fakeServer is an httptest server that records requests and answers with
// a handler. n is the 1-based number of the request at this server.
type fakeServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seenRequest
}

func newFakeServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, n int)) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, seenRequest{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Body: string(body), At: at})
		n := len(f.reqs)
		f.mu.Unlock()
		handle(w, r, n)
	}))
	t.Cleanup(f.Close)
	return f
}

// answeringServer returns a fake server that answers every request with
// status and v as JSON.
func answeringServer(t *testing.T, status int, v any) *fakeServer {
	t.Helper()
	return newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, status, v) })
}

// failingServer returns a fake server that answers every request with the
// API error of status, code and msg.
func failingServer(t *testing.T, status int, code, msg string) *fakeServer {
	t.Helper()
	return newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeError(w, status, code, msg) })
}

// requests returns a copy of the requests received so far.
func (f *fakeServer) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.reqs...)
}

// count returns the number of requests received so far.
func (f *fakeServer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// hostPort returns the server's address without scheme.
func (f *fakeServer) hostPort() string { return strings.TrimPrefix(f.URL, "http://") }

// downAddress returns the address of a server that has been closed, so
// connecting to it is refused.
func downAddress(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(http.NotFoundHandler())
	addr := s.URL
	s.Close()
	return addr
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": code, "message": msg})
}

// testLease is a lease in the wire form of the API.
func testLease(key string) map[string]any {
	return map[string]any{
		"key": key, "holder": "h1", "token": 17, "ttl": "10s", "state": "held",
		"expires_in": "9.2s", "acquired_at": "2026-11-21T10:00:00.123Z",
		"renewed_at": "2026-11-21T10:00:05.001Z", "metadata": map[string]string{"zone": "a"},
		"modify_index": 42,
	}
}

// sleepRecorder replaces the client's sleep: it records the delays and
// returns at once (or with ctx's error).
type sleepRecorder struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (s *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.delays = append(s.delays, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleepRecorder) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.delays...)
}

// newTestClient returns a client for addrs whose backoff does not wait and
// whose jitter always picks the ceiling, so delays are deterministic.
func newTestClient(t *testing.T, addrs ...string) (*Client, *sleepRecorder) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Addresses = addrs
	cfg.Timeout = 5 * time.Second
	cfg.RetryMax = 3
	cfg.RetryBaseDelay = 100 * time.Millisecond
	cfg.RetryMaxDelay = time.Second
	c, rec := newRecordingClient(t, cfg)
	c.jitter = func(d time.Duration) time.Duration { return d }
	return c, rec
}

// newRecordingClient returns a client of cfg whose backoff does not wait
// but records each delay. Its calls are HTTP requests of their own, which
// the fake servers of these tests count: the request stream is tested
// against the real server (httpapi's TestRequestStream tests) and here by
// TestStreamRefusedCallsGoAsRequests.
func newRecordingClient(t *testing.T, cfg *Config) (*Client, *sleepRecorder) {
	t.Helper()
	cfg.DisableStream = true
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	rec := &sleepRecorder{}
	c.sleep = rec.sleep
	return c, rec
}

// waitUntil polls cond every 5ms until it returns true, and fails t,
// naming what it waited for, when timeout passes first. (This module
// cannot import the root module's test/harness.)
func waitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
	}
}

// logBuffer is an io.Writer for loggers that tests read while goroutines
// write.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
