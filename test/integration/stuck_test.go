package integration

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/worker"
)

// TestStuckWorkerCutFromTheAPI: against three real servers, a worker whose
// HTTP traffic goes to a closed port while its gossip reaches the servers
// is alive to the balancer but never takes a key. Within the group's stuck
// grace it is marked stuck and its targets move to the live workers, which
// take them: every key ends owned by a live worker, no two handlers of a
// key overlap, and `tenure leases stale` exits 1 naming the stuck worker.
func TestStuckWorkerCutFromTheAPI(t *testing.T) {
	const keys, grace = 12, 2 * time.Second
	c := startCluster(t, 3)
	admin := adminClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := admin.Groups().Put(ctx, "stuck", client.GroupSpec{Prefix: "stuck/", Count: keys, StuckGrace: grace.String()}); err != nil {
		t.Fatalf("create group: %v", err)
	}
	runs := newRunLog()
	f := newWorkerFleet(t, c, "stuck", placementTTL, runs)
	live := ids(f.startN(t, "live", 2))

	// The cut worker: its client points at a port nobody listens on; it
	// joins the servers' gossip directly.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	var gossip []string
	for _, nd := range c.nodes {
		gossip = append(gossip, nd.gossipAddr)
	}
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{closed}
	cfg.Timeout = time.Second
	cut, err := client.New(cfg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	w := worker.New(cut, "stuck", func(ctx context.Context, key string, token uint64) {
		t.Errorf("the cut worker ran a handler for %s", key)
	}, worker.WithWorkerID("cut"), worker.WithWorkerTTL(placementTTL), worker.WithJoin(gossip...), worker.WithWorkerLogger(f.logger))
	go func() {
		defer close(done)
		_ = w.Run(wctx)
	}()
	t.Cleanup(func() { stop(); <-done })

	group := func() (*client.Group, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		g, _, err := admin.Groups().Get(ctx, "stuck", nil)
		return g, err
	}
	poll.WaitFor(t, 30*time.Second, func() error {
		g, err := group()
		if err != nil {
			return err
		}
		for _, k := range g.Keys {
			if k.Target == "cut" {
				return nil
			}
		}
		return fmt.Errorf("the cut worker has no target yet")
	})
	poll.WaitFor(t, grace+30*time.Second, func() error {
		g, err := group()
		if err != nil {
			return err
		}
		if len(g.Stuck) != 1 || g.Stuck[0] != "cut" {
			return fmt.Errorf("stuck = %v, want [cut]", g.Stuck)
		}
		for _, k := range g.Keys {
			if k.Target == "cut" || k.State != "held" || (k.Worker != live[0] && k.Worker != live[1]) {
				return fmt.Errorf("%s: target %q, %s by %q", k.Key, k.Target, k.State, k.Worker)
			}
		}
		out, code := c.tenureCLI(t, "", "leases", "stale")
		if code != 1 || !strings.Contains(out, "cut") {
			return fmt.Errorf("tenure leases stale exited %d:\n%s", code, out)
		}
		return nil
	})
	runs.checkExclusive(t)
}
