package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness"
)

// streamClient is a Go client of url with the request stream on (the
// default), retrying nothing, so that every answer shows.
func streamClient(t *testing.T, url, token string, tls *client.TLSConfig) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{url}
	cfg.Token = token
	cfg.RetryMax = 0
	if tls != nil {
		cfg.TLS = *tls
	}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// warmStream makes calls of cl (reads of a key never held, answered 404)
// until n's server gets no HTTP request for one: the first calls go as
// requests of their own while the stream opens in the background.
func warmStream(t *testing.T, cl *client.Client, n *testNode) {
	t.Helper()
	harness.WaitUntil(t, 10*time.Second, "the request stream to carry the calls", func() bool {
		before := n.hits.Load()
		if _, _, err := cl.Leases().Get(context.Background(), "warm/never-held", nil); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("read of a key never held: %v", err)
		}
		return n.hits.Load() == before
	})
}

// leaseCalls acquires key, renews it n times, reads and releases it, and
// fails t on any error or a wrong answer.
func leaseCalls(t *testing.T, cl *client.Client, key string, n int) {
	t.Helper()
	ctx := context.Background()
	l, meta, err := cl.Leases().Acquire(ctx, key, client.AcquireRequest{Holder: "h", TTL: 30 * time.Second})
	if err != nil {
		t.Fatalf("acquire %s: %v", key, err)
	}
	if !meta.Created || !meta.KnownLeader || meta.Address == "" {
		t.Errorf("acquire %s: meta %+v, want Created, the address and a known leader", key, meta)
	}
	for i := range n {
		got, _, err := cl.Leases().Renew(ctx, key, "h", l.Token)
		if err != nil || got.Token != l.Token {
			t.Fatalf("renew %d of %s: %+v, %v", i, key, got, err)
		}
	}
	if got, _, err := cl.Leases().Get(ctx, key, nil); err != nil || got.Holder != "h" {
		t.Fatalf("read %s: %+v, %v", key, got, err)
	}
	if _, _, err := cl.Leases().Renew(ctx, key, "h", l.Token+1); !errors.Is(err, client.ErrLeaseLost) && !errors.Is(err, client.ErrNotHolder) {
		t.Errorf("renew of %s under a token it does not have: %v, want lease lost", key, err)
	}
	if _, err := cl.Leases().Release(ctx, key, "h", l.Token); err != nil {
		t.Fatalf("release %s: %v", key, err)
	}
}

// TestRequestStreamCarriesLeaseCalls: once its request stream is open, a
// Go client's lease calls go to the leader over it (no HTTP request of
// their own), and answer as requests do, refusals included.
func TestRequestStreamCarriesLeaseCalls(t *testing.T) {
	c := startCluster(t, 3)
	leader := c.leader()
	cl := streamClient(t, leader.url, "", nil)
	warmStream(t, cl, leader)
	before := leader.hits.Load()
	leaseCalls(t, cl, "s/a", 50)
	if n := leader.hits.Load() - before; n != 0 {
		t.Errorf("the leader got %d HTTP requests for 54 lease calls over an open stream, want 0", n)
	}

	// With the stream off, each call is a request of its own.
	cfg := cl.Config()
	cfg.DisableStream = true
	plain, err := client.New(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	before = leader.hits.Load()
	leaseCalls(t, plain, "s/b", 5)
	if n := leader.hits.Load() - before; n != 9 {
		t.Errorf("the leader got %d HTTP requests for 9 lease calls without the stream, want 9", n)
	}
}

// TestRequestStreamChecksTheTokenOfEveryFrame: with ACLs on, each frame
// is checked against the token the stream was opened with, as the
// request would be; a token deleted while its stream is open is refused
// at the next frame.
func TestRequestStreamChecksTheTokenOfEveryFrame(t *testing.T) {
	e := startACL(t, 1)
	e.policy(t, "writer", rule("a/", "read", "write"), rule("warm/", "read"))
	tok := e.token(t, client.ACLTokenSpec{Policies: []string{"writer"}})
	url := e.leader().url
	cl := streamClient(t, url, tok.SecretID, nil)
	warmStream(t, cl, e.leader())
	before := e.leader().hits.Load()
	leaseCalls(t, cl, "a/1", 3)
	ctx := context.Background()
	if _, _, err := cl.Leases().Acquire(ctx, "b/1", client.AcquireRequest{Holder: "h", TTL: 30 * time.Second}); !errors.Is(err, client.ErrPermissionDenied) {
		t.Errorf("acquire of a key outside the token's prefix: %v, want permission denied", err)
	}
	if n := e.leader().hits.Load() - before; n != 0 {
		t.Fatalf("%d HTTP requests, want 0: every call over the open stream", n)
	}
	l, _, err := cl.Leases().Acquire(ctx, "a/2", client.AcquireRequest{Holder: "h", TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	doAs(t, e.boot, "DELETE", url+"/v1/acl/token/"+tok.AccessorID, "").wantStatus(t, "delete token", http.StatusNoContent)
	if _, _, err := cl.Leases().Renew(ctx, "a/2", "h", l.Token); !errors.Is(err, client.ErrACLNotFound) {
		t.Errorf("renew over the stream after its token was deleted: %v, want acl token not found", err)
	}
	if n := e.leader().hits.Load() - before; n != 1 {
		t.Errorf("%d HTTP requests, want 1 (the deletion): the refusal came over the open stream", n)
	}
}

// TestRequestStreamOverMutualTLS: the stream works over the API's mutual
// TLS (HTTP/1.1 negotiated for it, though the server offers HTTP/2).
func TestRequestStreamOverMutualTLS(t *testing.T) {
	p := newTestPKI(t)
	c := startClusterTLS(t, 3, p)
	leader := c.leader()
	pair, err := p.CA.IssueClient(cluster.ClientCertOptions{Name: "stream"})
	files := p.Write(t, "client-stream", pair, err)
	cl := streamClient(t, leader.url, "", &client.TLSConfig{CAFile: files.CAFile, CertFile: files.CertFile, KeyFile: files.KeyFile})
	warmStream(t, cl, leader)
	before := leader.hits.Load()
	leaseCalls(t, cl, "tls/a", 20)
	if n := leader.hits.Load() - before; n != 0 {
		t.Errorf("the leader got %d HTTPS requests for 24 lease calls over an open stream, want 0", n)
	}
}

// rawStream opens a request stream on addr (host:port) by hand.
func rawStream(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", wire.StreamPath, wire.StreamProtocol)
	in := bufio.NewReader(conn)
	resp, err := http.ReadResponse(in, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("open the stream: %v, %v", resp, err)
	}
	return conn, in
}

// TestRequestStreamFrameRules: the stream answers only the calls it
// carries (others are 404 not_found frames, the stream stays open); it
// answers several frames in flight by their IDs; a frame over the bound
// ends the stream; a request without the upgrade headers is refused.
func TestRequestStreamFrameRules(t *testing.T) {
	n := startNode(t)
	conn, in := rawStream(t, n.addr)
	out := bufio.NewWriter(conn)
	send := func(f wire.StreamRequest) {
		t.Helper()
		if err := wire.WriteStreamRequest(out, f); err != nil {
			t.Fatal(err)
		}
	}
	send(wire.StreamRequest{ID: 7, Method: "GET", Target: "/v1/status"})
	send(wire.StreamRequest{ID: 8, Method: "PUT", Target: "/v1/leases/dir/k", Body: []byte(`{"holder":"h","ttl":"10s"}`)})
	send(wire.StreamRequest{ID: 9, Method: "GET", Target: "/v1/leases/nothing-here"})
	out.Flush()
	got := map[uint32]wire.StreamAnswer{}
	for range 3 {
		a, err := wire.ReadStreamAnswer(in)
		if err != nil {
			t.Fatal(err)
		}
		got[a.ID] = a
	}
	if a := got[7]; a.Status != http.StatusNotFound || !strings.Contains(string(a.Body), wire.CodeNotFound) {
		t.Errorf("GET /v1/status over the stream: %d %s, want 404 not_found", a.Status, a.Body)
	}
	if a := got[8]; a.Status != http.StatusCreated || a.Header.Get(wire.HeaderLeaderAddr) == "" || !strings.Contains(string(a.Body), `"key":"dir/k","holder":"h"`) {
		t.Errorf("acquire of dir/k over the stream: %d %v %s, want 201 with the leader's address and the lease of dir/k", a.Status, a.Header, a.Body)
	}
	if a := got[9]; a.Status != http.StatusNotFound {
		t.Errorf("read of a key never held: %d %s, want 404", a.Status, a.Body)
	}

	// A frame longer than the bound ends the stream.
	conn.Write([]byte{0xff, 0xff, 0xff, 0xff})
	if _, err := wire.ReadStreamAnswer(in); err == nil {
		t.Error("the stream answered after a frame over the bound, want it closed")
	}

	// Without the upgrade headers: 400 naming them.
	r := do(t, "GET", n.url+wire.StreamPath, "")
	r.wantStatus(t, "GET the stream path without Upgrade", http.StatusBadRequest)
	if !strings.Contains(string(r.body), "Upgrade") {
		t.Errorf("refusal %s does not name the Upgrade header", r.body)
	}
}

// heldRenewals answers a renewal only once release is closed, counting
// those in work.
type heldRenewals struct {
	Leases
	inWork, most atomic.Int64
	release      chan struct{}
}

func (h *heldRenewals) Renew(ctx context.Context, key, holder, _ string, token uint64) (cluster.LeaseView, error) {
	n := h.inWork.Add(1)
	defer h.inWork.Add(-1)
	for m := h.most.Load(); n > m && !h.most.CompareAndSwap(m, n); m = h.most.Load() {
	}
	select {
	case <-h.release:
	case <-ctx.Done():
		return cluster.LeaseView{}, ctx.Err()
	}
	return cluster.LeaseView{Lease: &fsm.Lease{Key: key, Holder: holder, Token: token}}, nil
}

// RenewMany answers a bulk renewal as Renew answers one.
func (h *heldRenewals) RenewMany(ctx context.Context, holder string, refs []cluster.LeaseRef) ([]cluster.RenewResult, error) {
	if _, err := h.Renew(ctx, "", holder, "", 0); err != nil {
		return nil, err
	}
	out := make([]cluster.RenewResult, len(refs))
	for i, r := range refs {
		out[i] = cluster.RenewResult{Lease: cluster.LeaseView{Lease: &fsm.Lease{Key: r.Key, Holder: holder, Token: r.Token}}}
	}
	return out, nil
}

// serveHeld serves the API of a leader whose renewals wait for
// leases.release, with cfg's other settings, and returns its host:port.
func serveHeld(t *testing.T, cfg Config, leases *heldRenewals) string {
	t.Helper()
	cfg.Node = Node{Replica: &leadingReplica{}, Leases: leases}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestStreamBoundsTheFramesInWork: the server works on at most
// wire.MaxStreamInFlight frames of one stream at once; the others wait
// unread, and all are answered once the first ones are.
func TestStreamBoundsTheFramesInWork(t *testing.T) {
	leases := &heldRenewals{release: make(chan struct{})}
	cfg := DefaultConfig()
	cfg.MaxActive = 0 // only the stream's own bound
	conn, in := rawStream(t, serveHeld(t, cfg, leases))
	out := bufio.NewWriter(conn)
	const frames = wire.MaxStreamInFlight + 72
	for i := range frames {
		wire.WriteStreamRequest(out, wire.StreamRequest{ID: uint32(i), Method: "POST", Target: fmt.Sprintf("/v1/renew/k%d", i),
			Body: []byte(`{"holder":"h","token":1,"secret":"s"}`)})
	}
	out.Flush()
	harness.WaitUntil(t, 10*time.Second, "the first frames in work", func() bool { return leases.inWork.Load() == wire.MaxStreamInFlight })
	time.Sleep(200 * time.Millisecond) // room for a frame past the bound to start
	if m := leases.most.Load(); m != wire.MaxStreamInFlight {
		t.Errorf("%d frames in work at once, want %d", m, wire.MaxStreamInFlight)
	}
	close(leases.release)
	seen := map[uint32]bool{}
	for range frames {
		a, err := wire.ReadStreamAnswer(in)
		if err != nil {
			t.Fatal(err)
		}
		if a.Status != http.StatusOK || seen[a.ID] {
			t.Fatalf("answer %d: %d %s (seen before: %v)", a.ID, a.Status, a.Body, seen[a.ID])
		}
		seen[a.ID] = true
	}
}

// TestIdleStreamIsClosed: a stream that sends no frame for
// Config.StreamIdleTimeout (-http-idle-timeout) is closed by the server.
func TestIdleStreamIsClosed(t *testing.T) {
	cfg := DefaultConfig()
	cfg.StreamIdleTimeout = 200 * time.Millisecond
	conn, _ := rawStream(t, serveHeld(t, cfg, &heldRenewals{}))
	start := time.Now()
	if !closedByServer(conn, 5*time.Second) {
		t.Fatal("an idle stream was still open after 5s")
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("an idle stream closed after %v, before its idle timeout of 200ms", d)
	}
}

// TestStreamFramesAreAdmittedAsRequests: a frame past -http-max-active
// waits its turn and, past -http-max-queue-wait, is answered 429
// overloaded with Retry-After, as the request would be; the frames in
// work are answered once their turn ends.
func TestStreamFramesAreAdmittedAsRequests(t *testing.T) {
	srv, leases := admissionServer(t, 2, 100*time.Millisecond)
	conn, in := rawStream(t, strings.TrimPrefix(srv.URL, "http://"))
	out := bufio.NewWriter(conn)
	for id := range uint32(2) {
		wire.WriteStreamRequest(out, wire.StreamRequest{ID: id, Method: "POST", Target: "/v1/renew/k", Body: []byte(`{"holder":"h","token":1}`)})
	}
	out.Flush()
	waitParked(t, leases, 2)
	wire.WriteStreamRequest(out, wire.StreamRequest{ID: 2, Method: "POST", Target: "/v1/renew/k", Body: []byte(`{"holder":"h","token":1}`)})
	out.Flush()
	a, err := wire.ReadStreamAnswer(in)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != 2 || a.Status != http.StatusTooManyRequests || !strings.Contains(string(a.Body), wire.CodeOverloaded) || a.Header.Get("Retry-After") == "" {
		t.Fatalf("a third frame while two are worked on: id %d, %d %s, Retry-After %q; want frame 2 answered 429 overloaded with Retry-After",
			a.ID, a.Status, a.Body, a.Header.Get("Retry-After"))
	}
	close(leases.release)
	for range 2 {
		if a, err := wire.ReadStreamAnswer(in); err != nil || a.Status != http.StatusOK {
			t.Errorf("a frame that had its turn: %+v, %v; want 200", a, err)
		}
	}
}

// TestStreamOnAFollowerForwardsAndCounts: a frame sent to a follower is
// forwarded to the leader as its request would be (the answer names the
// leader), and the follower's request metrics count it under its route.
func TestStreamOnAFollowerForwardsAndCounts(t *testing.T) {
	c := startCluster(t, 3)
	leader, follower := c.follower()
	const line = `tenure_http_requests_total{code="201",method="PUT",route="/v1/leases/{key:.+}"}`
	count := func() string {
		for l := range strings.SplitSeq(string(do(t, "GET", follower.url+"/metrics", "").body), "\n") {
			if v, ok := strings.CutPrefix(l, line+" "); ok {
				return v
			}
		}
		return "0"
	}
	before := count()
	conn, in := rawStream(t, follower.addr)
	out := bufio.NewWriter(conn)
	wire.WriteStreamRequest(out, wire.StreamRequest{ID: 1, Method: "PUT", Target: "/v1/leases/fwd", Body: []byte(`{"holder":"h","ttl":"10s"}`)})
	out.Flush()
	a, err := wire.ReadStreamAnswer(in)
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != http.StatusCreated || a.Header.Get(wire.HeaderLeaderAddr) != leader.addr {
		t.Fatalf("acquire sent over a follower's stream: %d %v %s, want 201 naming the leader %s", a.Status, a.Header, a.Body, leader.addr)
	}
	if after := count(); after == before {
		t.Errorf("the follower's %s stayed %s after a frame: want it counted", line, before)
	}
}

// TestStreamBoundsTheBytesInWork: the request frames a server holds of
// one stream are at most wire.MaxStreamBytesInWork bytes: of bulk
// renewals of 300 KiB, three are in work at once, not the five sent.
func TestStreamBoundsTheBytesInWork(t *testing.T) {
	leases := &heldRenewals{release: make(chan struct{})}
	cfg := DefaultConfig()
	cfg.MaxActive = 0
	conn, in := rawStream(t, serveHeld(t, cfg, leases))
	out := bufio.NewWriter(conn)
	body := `{"holder":"h","secret":"s","leases":[{"key":"k","token":1}]` + strings.Repeat(" ", 300<<10) + "}"
	for id := range uint32(5) {
		if err := wire.WriteStreamRequest(out, wire.StreamRequest{ID: id, Method: "POST", Target: "/v1/renew", Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	out.Flush()
	harness.WaitUntil(t, 10*time.Second, "three bulk renewals in work", func() bool { return leases.inWork.Load() == 3 })
	time.Sleep(200 * time.Millisecond) // room for a fourth to start
	if m := leases.most.Load(); m != 3 {
		t.Errorf("%d bulk renewals of 300 KiB in work at once, want 3 (1 MiB)", m)
	}
	close(leases.release)
	for range 5 {
		if a, err := wire.ReadStreamAnswer(in); err != nil || a.Status != http.StatusOK {
			t.Fatalf("answer: %d %s, %v", a.Status, a.Body, err)
		}
	}
}

// TestStreamRoutesFramesAsTheRouterDoes: a frame is served by the route,
// and with the key, that the router would give the same request, and the
// stream carries no other call (wire.StreamCarries).
func TestStreamRoutesFramesAsTheRouterDoes(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Node = Node{Replica: &leadingReplica{}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"k", "a/b", "a%2Fb", "a%20b", "a//b", "..", "%zz", "x/", "é"}
	var targets []string
	for _, k := range keys {
		targets = append(targets, "/v1/leases/"+k, "/v1/renew/"+k, "/v1/groups/"+k, "/v1/revoke/"+k)
	}
	targets = append(targets, "/v1/leases", "/v1/leases/", "/v1/renew", "/v1/renew/", "/v1/renewx", "/v1/leasesx/k",
		"/v1/status", "/v1/stream", "/v1/renew?x=1", "/v1/leases/k?index=3", "/v1/leases%2Fk", "/v1/", "/v1", "/")
	for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodPatch} {
		for _, target := range targets {
			req, err := http.NewRequest(method, target, nil)
			if err != nil {
				continue // not a request the stream can build either
			}
			c, key, ok := s.carriedRoute(method, req.URL.EscapedPath())
			if carries := wire.StreamCarries(method, target); ok != carries {
				t.Errorf("%s %s: the stream routes it: %v, wire.StreamCarries: %v", method, target, ok, carries)
			}
			if !ok {
				continue
			}
			var m mux.RouteMatch
			if !s.router.Match(req, &m) || m.Route == nil || m.MatchErr != nil {
				t.Errorf("%s %s: the stream routes it to %s, the router to none", method, target, c.template)
				continue
			}
			tmpl, _ := m.Route.GetPathTemplate()
			if tmpl != c.template || m.Vars["key"] != key {
				t.Errorf("%s %s: the stream routes it to %s key %q, the router to %s key %q", method, target, c.template, key, tmpl, m.Vars["key"])
			}
		}
	}
}

// TestStreamThatStopsReadingIsClosed: a client that sends frames and
// reads no answer loses its stream once a write of answers has waited
// streamWriteTimeout (docs/http-api.md, "The request stream"). The
// client sees it when its own writes fail: the server closed the
// connection with frames of it unread, which resets it.
func TestStreamThatStopsReadingIsClosed(t *testing.T) {
	defer func(d time.Duration) { streamWriteTimeout = d }(streamWriteTimeout)
	streamWriteTimeout = 200 * time.Millisecond
	n := startNode(t)
	// A lease whose answer is about 17 KB: metadata at its bounds.
	meta := map[string]string{}
	for i := range wire.MaxMetadataEntries {
		meta[fmt.Sprintf("%0*d", wire.MaxMetadataKey, i)] = strings.Repeat("v", wire.MaxMetadataValue)
	}
	body, err := json.Marshal(map[string]any{"holder": "h", "ttl": "1m", "metadata": meta})
	if err != nil {
		t.Fatal(err)
	}
	do(t, "PUT", n.url+"/v1/leases/big", string(body)).wantStatus(t, "acquire with the largest metadata", http.StatusCreated)

	conn, _ := rawStream(t, n.addr)
	conn.(*net.TCPConn).SetReadBuffer(4096)
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	out := bufio.NewWriter(conn)
	for sent := 0; ; sent++ {
		err := wire.WriteStreamRequest(out, wire.StreamRequest{ID: uint32(sent), Method: "GET", Target: "/v1/leases/big"})
		if err == nil {
			err = out.Flush()
		}
		var ne net.Error
		switch {
		case err == nil && sent < 10_000_000:
			continue
		case err == nil:
			t.Fatalf("%d frames sent and no answer read, and the stream is still open", sent)
		case errors.As(err, &ne) && ne.Timeout():
			t.Fatalf("after %d frames, the stream stayed open for 20 s while its client read nothing: %v", sent, err)
		}
		t.Logf("the server closed the stream after %d frames: %v", sent, err)
		return
	}
}
