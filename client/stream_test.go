package client

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// streamServer is a fake server that opens request streams and serves
// their frames with serve, which may answer them in any order (a nil
// answer leaves a frame unanswered; close, when it returns true, ends the
// stream at once). Requests of their own get the lease of their key.
type streamServer struct {
	*httptest.Server
	opened, frames, plain atomic.Int64
}

func newStreamServer(t *testing.T, serve func(batch []wire.StreamRequest, conn int64) (answers []wire.StreamAnswer, close bool)) *streamServer {
	t.Helper()
	s := &streamServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != wire.StreamPath || r.Header.Get("Upgrade") != wire.StreamProtocol {
			s.plain.Add(1)
			a := leaseAnswer(wire.StreamRequest{Target: r.URL.Path})
			w.Header().Set("Content-Type", "application/json")
			w.Write(a.Body)
			return
		}
		n := s.opened.Add(1)
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + wire.StreamProtocol + "\r\n\r\n")
		rw.Flush()
		for {
			// Read the frames that came together, then answer them.
			f, err := wire.ReadStreamRequest(rw.Reader)
			if err != nil {
				return
			}
			batch := []wire.StreamRequest{f}
			for rw.Reader.Buffered() > 0 {
				if f, err = wire.ReadStreamRequest(rw.Reader); err != nil {
					return
				}
				batch = append(batch, f)
			}
			s.frames.Add(int64(len(batch)))
			answers, end := serve(batch, n)
			if end {
				return
			}
			for _, a := range answers {
				wire.WriteStreamAnswer(rw.Writer, a)
			}
			rw.Flush()
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// warm makes a call of c, which goes as a request of its own and starts
// opening a stream to srv, and waits until the stream is open.
func warm(t *testing.T, c *Client, srv *streamServer) {
	t.Helper()
	if _, _, err := c.Leases().Renew(context.Background(), "warm", "h1", 17); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "the stream to open", func() bool {
		c.streams.mu.Lock()
		defer c.streams.mu.Unlock()
		return c.streams.open[srv.URL] != nil
	})
}

// leaseAnswer is the 200 answer of frame f with the lease of the key of
// its target.
func leaseAnswer(f wire.StreamRequest) wire.StreamAnswer {
	key := strings.TrimPrefix(strings.TrimPrefix(f.Target, "/v1/renew/"), "/v1/leases/")
	body, _ := json.Marshal(testLease(key))
	return wire.StreamAnswer{ID: f.ID, Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
}

// TestStreamCallsShareOneConnection: concurrent calls go over one stream,
// and each gets the answer to its own frame though the server answers in
// another order.
func TestStreamCallsShareOneConnection(t *testing.T) {
	srv := newStreamServer(t, func(batch []wire.StreamRequest, _ int64) ([]wire.StreamAnswer, bool) {
		var out []wire.StreamAnswer
		for i := len(batch) - 1; i >= 0; i-- {
			out = append(out, leaseAnswer(batch[i]))
		}
		return out, false
	})
	cfg := DefaultConfig()
	cfg.Addresses = []string{srv.URL}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	warm(t, c, srv)
	plain := srv.plain.Load()
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			key := "k" + string(rune('A'+i%26)) + strings.Repeat("x", i)
			l, meta, err := c.Leases().Renew(context.Background(), key, "h1", 17)
			if err != nil || l.Key != key || meta.SentAt.IsZero() {
				t.Errorf("renew %s: %+v, %+v, %v", key, l, meta, err)
			}
		})
	}
	wg.Wait()
	if n, p := srv.opened.Load(), srv.plain.Load()-plain; n != 1 || p != 0 {
		t.Errorf("%d streams opened and %d requests of their own for 64 concurrent calls, want 1 and 0", n, p)
	}
}

// TestStreamEndedMidCallIsRetried: a stream that ends while a call is in
// flight fails the attempt as a connection would (its outcome unknown);
// a renewal, safe to repeat, is sent again, as a request of its own while
// a new stream opens.
func TestStreamEndedMidCallIsRetried(t *testing.T) {
	srv := newStreamServer(t, func(batch []wire.StreamRequest, conn int64) ([]wire.StreamAnswer, bool) {
		if conn == 1 {
			return nil, true // the first stream dies with the call unanswered
		}
		return []wire.StreamAnswer{leaseAnswer(batch[0])}, false
	})
	c, _ := newTestClient(t, srv.URL)
	c.streams = newStreams(nil) // newTestClient turns it off
	warm(t, c, srv)
	if _, _, err := c.Leases().Renew(context.Background(), "k", "h1", 17); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if f, p := srv.frames.Load(), srv.plain.Load(); f != 1 || p != 2 {
		t.Errorf("%d frames and %d requests of their own, want 1 (lost with its stream) and 2 (the warm-up, the retry)", f, p)
	}
	waitUntil(t, 5*time.Second, "a new stream", func() bool { return srv.opened.Load() == 2 })
}

// TestStreamRefusedCallsGoAsRequests: a server that does not open the
// stream (an older one) gets the calls as requests of their own, and is
// not asked to open one again for streamRetryAfter.
func TestStreamRefusedCallsGoAsRequests(t *testing.T) {
	var opens, calls atomic.Int64
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.URL.Path == wire.StreamPath {
			opens.Add(1)
			writeError(w, 404, "not_found", "no route")
			return
		}
		calls.Add(1)
		writeJSON(w, 200, testLease("k"))
	})
	cfg := DefaultConfig()
	cfg.Addresses = []string{srv.URL}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	renew := func() {
		t.Helper()
		if _, _, err := c.Leases().Renew(context.Background(), "k", "h1", 17); err != nil {
			t.Fatal(err)
		}
	}
	renew()
	waitUntil(t, 5*time.Second, "the stream to be asked for", func() bool { return opens.Load() == 1 })
	for range 5 {
		renew()
	}
	if opens.Load() != 1 || calls.Load() != 6 {
		t.Errorf("%d stream openings and %d requests, want 1 and 6", opens.Load(), calls.Load())
	}
}

// TestStreamCarriesOnlyLeaseCalls: calls other than one lease's (and bulk
// renewals), and calls that wait on purpose, go as requests of their own.
func TestStreamCarriesOnlyLeaseCalls(t *testing.T) {
	c := &Client{streams: &streams{}}
	for _, tc := range []struct {
		r    request
		want bool
	}{
		{request{method: "POST", path: "/v1/renew/k"}, true},
		{request{method: "POST", path: "/v1/renew"}, true},
		{request{method: "PUT", path: "/v1/leases/a%2Fb"}, true},
		{request{method: "DELETE", path: "/v1/leases/k"}, true},
		{request{method: "GET", path: "/v1/leases/k"}, true},
		{request{method: "PUT", path: "/v1/leases/k", wait: time.Second}, false},
		{request{method: "GET", path: "/v1/leases"}, false},
		{request{method: "GET", path: "/v1/status"}, false},
		{request{method: "POST", path: "/v1/revoke/k"}, false},
		{request{method: "PUT", path: "/v1/snapshot", raw: []byte("x")}, false},
	} {
		if got := c.streamable(&tc.r); got != tc.want {
			t.Errorf("%s %s (wait %v): streamable %v, want %v", tc.r.method, tc.r.path, tc.r.wait, got, tc.want)
		}
	}
	if (&Client{}).streamable(&request{method: "POST", path: "/v1/renew/k"}) {
		t.Error("a Client without streams (DisableStream, HTTPClient) sent a call over one")
	}
}

// TestSilentStreamIsReplaced: a stream on which nothing comes back while a
// call waits (a server or path that went silent, as in a partition) is
// closed when the call's attempt times out, and the retry opens a new one
// instead of waiting on the silent stream again.
func TestSilentStreamIsReplaced(t *testing.T) {
	srv := newStreamServer(t, func(batch []wire.StreamRequest, conn int64) ([]wire.StreamAnswer, bool) {
		if conn == 1 {
			return nil, false // read, never answered, the stream kept open
		}
		return []wire.StreamAnswer{leaseAnswer(batch[0])}, false
	})
	c, _ := newTestClient(t, srv.URL)
	c.streams = newStreams(nil)
	c.cfg.Timeout = 200 * time.Millisecond
	warm(t, c, srv)
	if _, _, err := c.Leases().Renew(context.Background(), "k", "h1", 17); err != nil {
		t.Fatalf("renew: %v", err)
	}
	waitUntil(t, 5*time.Second, "a new stream instead of the silent one", func() bool { return srv.opened.Load() == 2 })
	if _, _, err := c.Leases().Renew(context.Background(), "k", "h1", 17); err != nil {
		t.Fatalf("renew over the new stream: %v", err)
	}
}

// TestIdleStreamIsClosedByTheClient: a stream without a call in flight
// for streamIdle (30 seconds; shortened here) is closed, and the next
// call opens another.
func TestIdleStreamIsClosedByTheClient(t *testing.T) {
	if streamIdle != 30*time.Second {
		t.Errorf("streamIdle %v, want the 30s docs/http-api.md names", streamIdle)
	}
	srv := newStreamServer(t, func(batch []wire.StreamRequest, _ int64) ([]wire.StreamAnswer, bool) {
		return []wire.StreamAnswer{leaseAnswer(batch[0])}, false
	})
	c, _ := newTestClient(t, srv.URL)
	c.streams = newStreams(nil)
	c.streams.idle = 100 * time.Millisecond
	warm(t, c, srv)
	for range 2 {
		if _, _, err := c.Leases().Renew(context.Background(), "k", "h1", 17); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, 5*time.Second, "the idle stream to close", func() bool {
		c.streams.mu.Lock()
		defer c.streams.mu.Unlock()
		return len(c.streams.open) == 0
	})
	if _, _, err := c.Leases().Renew(context.Background(), "k", "h1", 17); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "a second stream after the first idled out", func() bool { return srv.opened.Load() == 2 })
}

// TestStreamHeadersAreCanonical: wire.WriteStreamAnswer reads an answer's
// headers by these names without canonicalizing them.
func TestStreamHeadersAreCanonical(t *testing.T) {
	for _, name := range wire.StreamHeaders {
		if c := http.CanonicalHeaderKey(name); c != name {
			t.Errorf("stream header %q is not canonical (%q)", name, c)
		}
	}
}

// TestStreamAnswerRoundTrip: an answer frame reads back as written, with
// the stream's headers only, and an empty or too long value left out.
func TestStreamAnswerRoundTrip(t *testing.T) {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(wire.HeaderLeaderAddr, "10.0.0.1:7500")
	h.Set(wire.HeaderIndex, "42")
	h.Set("X-Other", "left out")
	h.Set(wire.HeaderBehind, strings.Repeat("x", 65536))
	h[wire.HeaderRelease] = []string{""}
	var buf strings.Builder
	w := bufio.NewWriter(&buf)
	body := []byte(`{"key":"k"}`)
	if err := wire.WriteStreamAnswer(w, wire.StreamAnswer{ID: 9, Status: 201, Header: h, Body: body}); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	a, err := wire.ReadStreamAnswer(bufio.NewReader(strings.NewReader(buf.String())))
	if err != nil {
		t.Fatal(err)
	}
	want := http.Header{"Content-Type": {"application/json"}, wire.HeaderLeaderAddr: {"10.0.0.1:7500"}, wire.HeaderIndex: {"42"}}
	if a.ID != 9 || a.Status != 201 || string(a.Body) != string(body) || !reflect.DeepEqual(a.Header, want) {
		t.Errorf("read back %d %d %v %s, want 9 201 %v %s", a.ID, a.Status, a.Header, a.Body, want, body)
	}
}

// TestTimedWriterBoundsEachWrite: a bufio.Writer over a wire.TimedWriter
// gives every write of the connection its own deadline, those its buffer
// makes when it fills as well as Flush's: frames written one after
// another for longer than the timeout pass as long as each write does
// (a deadline set before the first would have ended them), and a write
// that waits longer than the timeout fails.
func TestTimedWriterBoundsEachWrite(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	w := bufio.NewWriterSize(wire.TimedWriter{Conn: client, Timeout: 300 * time.Millisecond}, 1024)
	go func() {
		buf := make([]byte, 1024)
		for { // a read every 100 ms
			time.Sleep(100 * time.Millisecond)
			if _, err := server.Read(buf); err != nil {
				return
			}
		}
	}()
	for i := range 8 { // 8 frames that fill the buffer: 8 writes, 800 ms
		if err := wire.WriteStreamRequest(w, wire.StreamRequest{ID: uint32(i), Method: "POST", Target: "/v1/renew", Body: make([]byte, 1000)}); err != nil {
			t.Fatalf("frame %d, each write taking 100 ms: %v", i, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
	server.SetReadDeadline(time.Now()) // nobody reads now
	time.Sleep(150 * time.Millisecond)
	w.Write(make([]byte, 100))
	err := w.Flush()
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("a write nobody reads: %v, want a timeout", err)
	}
}
