//go:build unix

package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/test/harness"
)

// lockUntilSaid runs lock with args, waiting for ever, until its stderr
// holds want (or 10s pass), then stops it; it returns the stderr.
func lockUntilSaid(t *testing.T, want string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr harness.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"lock"}, args...), &stdout, &stderr) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), want) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	return stderr.String()
}

// While tenure lock waits for a key that another holder holds, it says so
// on stderr and names the holder.
func TestLockSaysWhoHoldsTheKey(t *testing.T) {
	f := newLockFake(t)
	f.mu.Lock()
	f.held = true
	f.mu.Unlock()
	const want = "waiting: the key is held by another holder"
	got := lockUntilSaid(t, want, "-http-addr", f.URL, "jobs/nightly", "--", "true")
	if !strings.Contains(got, want) || !strings.Contains(got, "holder=h ") || !strings.Contains(got, "token=7") {
		t.Errorf("stderr %q: want it to say that the key is held, by holder h with token 7", got)
	}
	if strings.Contains(got, "cannot reach") {
		t.Errorf("stderr %q: says the cluster cannot be reached, but it answered", got)
	}
}

// While tenure lock cannot reach the cluster it says so on stderr, keeps
// trying, and says so again when a server answers.
func TestLockSaysWhenItCannotReachTheCluster(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close()
	var stdout, stderr harness.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"lock", "-http-addr", addr, "-ttl", "2s", "jobs/nightly", "--", "true"}, &stdout, &stderr)
	}()
	const want = "cannot reach the cluster"
	waitFor(t, "the warning", func() bool { return strings.Contains(stderr.String(), want) })
	got := stderr.String()
	if !strings.Contains(got, "connection refused") || !strings.Contains(got, "-http-addr or TENURE_HTTP_ADDR") {
		t.Errorf("stderr %q: want it to say why the cluster cannot be reached and which flag sets the addresses", got)
	}
	if strings.Contains(got, "held by") {
		t.Errorf("stderr %q: says the key is held, but nothing answered", got)
	}

	// A server comes up at the address: lock gets the lease and runs.
	f := newLockFake(t)
	ln, err := net.Listen("tcp", strings.TrimPrefix(addr, "http://"))
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	up := httptest.NewUnstartedServer(f.Config.Handler)
	up.Listener.Close()
	up.Listener = ln
	up.Start()
	t.Cleanup(up.Close)
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code %d, want 0 (stderr %q)", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("lock did not finish once a server answered; stderr %q", stderr.String())
	}
	if !strings.Contains(stderr.String(), "reached the cluster") {
		t.Errorf("stderr %q: does not say that the cluster was reached", stderr.String())
	}
}

// waitFor polls cond until it holds, failing t after 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
