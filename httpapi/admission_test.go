package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

// leadingReplica is a fakeReplica that leads: requests are served here.
type leadingReplica struct{ fakeReplica }

func (*leadingReplica) Ready() error                 { return nil }
func (*leadingReplica) IsLeader() bool               { return true }
func (*leadingReplica) Verify(context.Context) error { return nil }

// parkedLeases parks every Renew and Acquire until release is closed,
// counting those parked; Get and LeaseIndex answer at once.
type parkedLeases struct {
	Leases
	release chan struct{}
	parked  atomic.Int32
}

func (p *parkedLeases) park(ctx context.Context) error {
	p.parked.Add(1)
	defer p.parked.Add(-1)
	select {
	case <-p.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *parkedLeases) Renew(ctx context.Context, key, _, _ string, token uint64) (cluster.LeaseView, error) {
	return cluster.LeaseView{Lease: &fsm.Lease{Key: key, Token: token}}, p.park(ctx)
}

func (p *parkedLeases) Acquire(ctx context.Context, req cluster.AcquireRequest) (cluster.LeaseView, bool, error) {
	return cluster.LeaseView{Lease: &fsm.Lease{Key: req.Key, Holder: req.Holder, Token: 1}}, true, p.park(ctx)
}

func (p *parkedLeases) Get(_ context.Context, key string, _ cluster.Consistency) (cluster.LeaseView, error) {
	return cluster.LeaseView{Lease: &fsm.Lease{Key: key, Holder: "h", Token: 1, ModifyIndex: 5}}, nil
}

func (p *parkedLeases) LeaseIndex() uint64 { return 5 }

func admissionServer(t *testing.T, active int, wait time.Duration) (*httptest.Server, *parkedLeases) {
	t.Helper()
	leases := &parkedLeases{release: make(chan struct{})}
	cfg := DefaultConfig()
	cfg.Node = Node{Replica: &leadingReplica{}, Leases: leases}
	cfg.MaxActive, cfg.MaxQueueWait = active, wait
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(func() {
		select {
		case <-leases.release:
		default:
			close(leases.release)
		}
		srv.Close()
	})
	return srv, leases
}

func post(t *testing.T, srv *httptest.Server, method, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// statusOf makes a request from any goroutine and returns its status, 0
// if it could not be made.
func statusOf(srv *httptest.Server, method, path, body string) int {
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		return 0
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitParked waits until n calls are parked.
func waitParked(t *testing.T, p *parkedLeases, n int32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.parked.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls parked, want %d", p.parked.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Guarantee (overload is a 429, not an election): past -http-max-active
// client requests a request waits its turn and, past
// -http-max-queue-wait, is answered 429 overloaded with Retry-After; a
// turn that comes free goes to the request that waited.
func TestAdmissionQueuesThenAnswersOverloaded(t *testing.T) {
	srv, leases := admissionServer(t, 2, 100*time.Millisecond)
	renew := `{"holder":"h","token":1}`
	done := make(chan int, 3)
	for range 2 {
		go func() { done <- statusOf(srv, http.MethodPost, "/v1/renew/k", renew) }()
	}
	waitParked(t, leases, 2)

	resp := post(t, srv, http.MethodPost, "/v1/renew/k", renew)
	var body wire.ErrorBody
	json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || body.Error != wire.CodeOverloaded || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a third renewal while two are worked on: %d %+v, Retry-After %q; want 429 overloaded with Retry-After",
			resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}

	// A status and a blocking read are served at once; a stale read is
	// client work, and waits its turn like the renewal.
	if resp := post(t, srv, http.MethodGet, "/v1/status", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("status while full: %d, want 200", resp.StatusCode)
	}
	if resp := post(t, srv, http.MethodGet, "/v1/leases/k?index=1", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("blocking read while full: %d, want 200 (it waits for a change, not for a turn)", resp.StatusCode)
	}
	if resp := post(t, srv, http.MethodGet, "/v1/leases/k?stale", ""); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("stale read while full: %d, want 429", resp.StatusCode)
	}

	// Once the parked calls finish, turns come free again.
	close(leases.release)
	for range 2 {
		if code := <-done; code != http.StatusOK {
			t.Errorf("a renewal that had its turn: %d, want 200", code)
		}
	}
	if resp := post(t, srv, http.MethodPost, "/v1/renew/k", renew); resp.StatusCode != http.StatusOK {
		t.Errorf("a renewal after the others finished: %d, want 200", resp.StatusCode)
	}
}

func TestAdmissionWaitingRequestGetsTheFreedTurn(t *testing.T) {
	srv, leases := admissionServer(t, 1, time.Minute)
	renew := `{"holder":"h","token":1}`
	first := make(chan int, 1)
	go func() { first <- statusOf(srv, http.MethodPost, "/v1/renew/k", renew) }()
	waitParked(t, leases, 1)
	second := make(chan int, 1)
	go func() { second <- statusOf(srv, http.MethodPost, "/v1/renew/k", renew) }()
	time.Sleep(50 * time.Millisecond) // the second waits its turn
	if leases.parked.Load() != 1 {
		t.Fatalf("%d renewals worked on with -http-max-active 1", leases.parked.Load())
	}
	close(leases.release)
	if a, b := <-first, <-second; a != http.StatusOK || b != http.StatusOK {
		t.Fatalf("renewals: %d and %d, want both 200 (the second had the first's turn)", a, b)
	}
}

// A blocking acquire waits without holding a turn: another request is
// served while it waits.
func TestBlockingAcquireGivesItsTurnBack(t *testing.T) {
	srv, leases := admissionServer(t, 1, 200*time.Millisecond)
	go statusOf(srv, http.MethodPut, "/v1/leases/k", `{"holder":"h","ttl":"10s","wait":"1m"}`)
	waitParked(t, leases, 1)
	go statusOf(srv, http.MethodPost, "/v1/renew/k", `{"holder":"h","token":1}`)
	waitParked(t, leases, 2)
}

func TestMaxActiveMustNotBeNegative(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Node = Node{Replica: &leadingReplica{}}
	cfg.MaxActive = -1
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "http-max-active") {
		t.Fatalf("New with MaxActive -1: %v, want an error naming http-max-active", err)
	}
}
