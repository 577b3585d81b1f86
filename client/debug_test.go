package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// Every call of NodeDebug goes to the first configured server and to no
// other, even when its answers name another configured server as the
// leader, and a refused part is the server's error.
func TestNodeDebugAsksOneServer(t *testing.T) {
	var other atomic.Int64
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.Add(1)
		w.Write([]byte(`{"node_id":"b"}`))
	}))
	defer b.Close()
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(HeaderLeaderAddr, strings.TrimPrefix(b.URL, "http://"))
		switch r.URL.Path {
		case "/v1/debug/logs":
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"not_found","message":"this server keeps no log lines"}`))
		default:
			w.Write([]byte(`{"node_id":"a"}`))
		}
	}))
	defer a.Close()
	cfg := DefaultConfig()
	cfg.Addresses = []string{a.URL, b.URL}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := c.NodeDebug()
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if got, err := d.Status(ctx); err != nil || !strings.Contains(string(got), `"a"`) {
			t.Fatalf("status %d = %s, %v; want server a's", i, got, err)
		}
		if _, err := d.Metrics(ctx); err != nil {
			t.Fatalf("metrics: %v", err)
		}
		if _, err := d.Profile(ctx, "goroutine"); err != nil {
			t.Fatalf("profile: %v", err)
		}
	}
	if _, err := d.Logs(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("logs of a server that keeps none = %v, want ErrNotFound", err)
	}
	if _, err := d.Profile(ctx, "cpu"); err == nil || !strings.Contains(err.Error(), "goroutine") {
		t.Errorf("profile cpu = %v, want an error naming the profiles served", err)
	}
	if n := other.Load(); n != 0 {
		t.Errorf("server b, named as the leader, got %d requests; want none", n)
	}
	if d.Address() != a.URL {
		t.Errorf("Address = %q, want %q", d.Address(), a.URL)
	}
}
