package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/worker"
)

// fakePlan serves a group's assignment (blocking on ?index) in front of a
// fakeTenure that serves the leases.
type fakePlan struct {
	mu      sync.Mutex
	plan    map[string]string
	index   uint64
	changed chan struct{}
}

func (p *fakePlan) set(plan map[string]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.plan, p.index = plan, p.index+1
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *fakePlan) serve(w http.ResponseWriter, r *http.Request) {
	min, _ := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
	for {
		p.mu.Lock()
		plan, index, changed := p.plan, p.index, p.changed
		p.mu.Unlock()
		if index > min {
			client.WriteJSON(w, 200, client.Assignment{Group: "g", Assignment: plan, Index: index})
			return
		}
		select {
		case <-changed:
		case <-time.After(2 * time.Second):
			client.WriteJSON(w, 200, client.Assignment{Group: "g", Assignment: plan, Index: index})
			return
		case <-r.Context().Done():
			return
		}
	}
}

// gossipSeed is a memberlist node on loopback for a worker to join.
func gossipSeed(t *testing.T) string {
	t.Helper()
	cfg := memberlist.DefaultLANConfig()
	cfg.Name = "server-1"
	cfg.BindAddr, cfg.BindPort, cfg.AdvertiseAddr = "127.0.0.1", 0, "127.0.0.1"
	cfg.LogOutput = hclog.NewNullLogger().StandardWriter(&hclog.StandardLoggerOptions{})
	seed, err := memberlist.Create(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { seed.Shutdown() })
	return seed.LocalNode().Address()
}

// runLoggedWorker runs worker w1 of group g against the server at url,
// holding each key it gets until the test ends, and returns what it logs
// at Info.
func runLoggedWorker(t *testing.T, url string) *client.LogBuffer {
	t.Helper()
	c := client.NewTestClient(t, strings.TrimPrefix(url, "http://"))
	out := new(client.LogBuffer)
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: out})
	w := worker.New(c, "g", func(ctx context.Context, key string, token uint64) { <-ctx.Done() },
		worker.WithWorkerID("w1"), worker.WithJoin(gossipSeed(t)), worker.WithWorkerTTL(time.Second), worker.WithWorkerLogger(logger))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return out
}

// (This test of package worker lives here, in package client_test, to
// serve leases with the fake tenure of client's tests.)
//
// A worker tells the application's logger, at Info, each key it acquires,
// loses and hands back, with the key, group and token.
func TestWorkerLogsKeyOwnershipAtInfo(t *testing.T) {
	f := client.NewFakeTenure(t)
	plan := &fakePlan{plan: map[string]string{"k1": "w1"}, index: 1, changed: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/assignment") {
			plan.serve(w, r)
			return
		}
		f.Serve(w, r)
	}))
	t.Cleanup(srv.Close)
	out := runLoggedWorker(t, srv.URL)
	logged := func(what string, parts ...string) {
		t.Helper()
		client.WaitUntil(t, 10*time.Second, what+" logged", func() bool {
			for _, line := range strings.Split(out.String(), "\n") {
				ok := strings.Contains(line, "[INFO]")
				for _, p := range parts {
					ok = ok && strings.Contains(line, p)
				}
				if ok {
					return true
				}
			}
			return false
		})
	}
	logged("the first acquisition", "key_acquired", "key=k1", "group=g", "token=1")
	f.Revoke("k1")
	logged("the loss", "key_lost", "key=k1", "group=g", "token=1")
	logged("the acquisition again", "key_acquired", "key=k1", "token=2")
	plan.set(map[string]string{})
	logged("the hand-back", "key_released", "key=k1", "group=g", "token=2")
}

// A hand-back that the cluster refuses is logged as a failure, at Warn
// (key_release_failed, with the error), never as key_released: the key
// stays held until its lease expires.
func TestWorkerLogsAFailedReleaseAsAFailure(t *testing.T) {
	f := client.NewFakeTenure(t)
	plan := &fakePlan{plan: map[string]string{"k1": "w1"}, index: 1, changed: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/assignment"):
			plan.serve(w, r)
		case r.Method == http.MethodDelete:
			client.WriteJSON(w, http.StatusForbidden, map[string]string{"error": "permission_denied", "message": "the token may not release k1"})
		default:
			f.Serve(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	out := runLoggedWorker(t, srv.URL)
	client.WaitUntil(t, 10*time.Second, "key_acquired logged", func() bool { return strings.Contains(out.String(), "key_acquired") })
	plan.set(map[string]string{})
	client.WaitUntil(t, 10*time.Second, "the refused hand-back logged", func() bool {
		return strings.Contains(out.String(), "[WARN]") && strings.Contains(out.String(), "key_release_failed") &&
			strings.Contains(out.String(), "permission_denied")
	})
	if strings.Contains(out.String(), "key_released") {
		t.Errorf("a refused hand-back was logged as key_released:\n%s", out.String())
	}
}
