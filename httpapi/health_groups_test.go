package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/worker"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// With one worker of capacity 2 in a group of 8 keys, one disabled and
// one prohibiting a holder, and a minimum of 3 workers, the placement
// health report sums up the group (what names the cause of the unowned
// keys: 1 worker, room 2, 7 enabled keys), lists the controlled keys, and
// the metrics count the controls and the workers against the minimum.
func TestPlacementHealthSumsUpGroupsAndControls(t *testing.T) {
	c := startClusterWith(t, 1, inproc.Options{TCP: true, Gossip: true, Serve: serveAPI, Tweak: func(cfg *cluster.Config) {
		cfg.BalanceSettle = 100 * time.Millisecond
		cfg.BalanceDebounce = 50 * time.Millisecond
	}})
	l := c.leader()
	do(t, http.MethodPut, l.url+"/v1/groups/parts", `{"prefix":"parts/","count":8,"min_workers":3}`).wantStatus(t, "put group", 200)
	do(t, http.MethodPut, l.url+"/v1/controls/parts/7", `{"disabled":true}`).wantStatus(t, "disable parts/7", 200)
	do(t, http.MethodPut, l.url+"/v1/controls/parts/6", `{"prohibited":["w-x"]}`).wantStatus(t, "prohibit on parts/6", 200)

	ctx, cancel := context.WithCancel(context.Background())
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{l.url}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	w := worker.New(cl, "parts", func(ctx context.Context, key string, token uint64) { <-ctx.Done() },
		worker.WithWorkerID("w-a"), worker.WithCapacity(2), worker.WithWorkerTTL(time.Second),
		worker.WithJoin(c.cluster.GossipAddr(0)))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })

	want := client.GroupHealth{Group: "parts", Keys: 8, DisabledKeys: 1, ProhibitedKeys: 1, UnownedKeys: 5, UnplannedKeys: 5,
		LiveWorkers: 1, Workers: 1, MinWorkers: 3, Room: 2, RoomPerWorkerMin: 2, RoomPerWorkerMax: 2}
	wantCtl := []client.ControlledKey{{Group: "parts", Key: "parts/6", Prohibited: []string{"w-x"}}, {Group: "parts", Key: "parts/7", Disabled: true}}
	series := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^tenure_group_disabled_keys\{group="parts"\} 1$`),
		regexp.MustCompile(`(?m)^tenure_group_prohibited_keys\{group="parts"\} 1$`),
		regexp.MustCompile(`(?m)^tenure_group_min_workers\{group="parts"\} 3$`),
		regexp.MustCompile(`(?m)^tenure_group_eligible_workers\{group="parts"\} 1$`),
	}
	harness.WaitFor(t, 20*time.Second, func() error {
		r, err := send(http.MethodGet, l.url+"/v1/health/placement", "", nil)
		if err != nil {
			return err
		}
		var h client.PlacementHealth
		if err := json.Unmarshal(r.body, &h); err != nil {
			return fmt.Errorf("status %d: %v: %s", r.status, err, r.body)
		}
		if len(h.Groups) != 1 || !reflect.DeepEqual(h.Groups[0], want) {
			return fmt.Errorf("groups = %+v, want [%+v]", h.Groups, want)
		}
		if !reflect.DeepEqual(h.Controlled, wantCtl) {
			return fmt.Errorf("controlled keys = %+v, want %+v", h.Controlled, wantCtl)
		}
		if h.OK || len(h.BelowMin) != 1 {
			return fmt.Errorf("ok %t, below min %+v: want parts below its minimum", h.OK, h.BelowMin)
		}
		m, err := send(http.MethodGet, l.url+"/metrics", "", nil)
		if err != nil {
			return err
		}
		for _, re := range series {
			if !re.Match(m.body) {
				return fmt.Errorf("metrics lack %s", re)
			}
		}
		return nil
	})
}

// A worker whose HTTP traffic is cut while its gossip is alive (its
// client points at a closed port; it joins the servers' gossip directly)
// is given keys it never takes. Within the group's grace the leader marks
// it stuck and moves those keys to the live workers, which take them: every
// key ends owned by a live worker, and the group view, the placement health
// report and the metrics name the stuck worker.
func TestWorkerCutFromTheAPILosesItsTargets(t *testing.T) {
	const grace = 1500 * time.Millisecond
	c := startClusterWith(t, 3, inproc.Options{TCP: true, Gossip: true, Serve: serveAPI, Tweak: func(cfg *cluster.Config) {
		cfg.BalanceSettle = 100 * time.Millisecond
		cfg.BalanceDebounce = 50 * time.Millisecond
		cfg.StuckCheck = 50 * time.Millisecond
	}})
	var urls, gossip []string
	for i, n := range c.nodes {
		urls = append(urls, n.url)
		gossip = append(gossip, c.cluster.GossipAddr(i))
	}
	l := c.leader()
	do(t, http.MethodPut, l.url+"/v1/groups/parts", fmt.Sprintf(`{"prefix":"parts/","count":12,"stuck_grace":%q}`, grace.String())).
		wantStatus(t, "put group", 200)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	startWorker := func(id string, addrs []string) {
		cfg := client.DefaultConfig()
		cfg.Addresses = addrs
		cfg.Timeout = time.Second
		cl, err := client.New(cfg)
		if err != nil {
			t.Fatalf("client.New: %v", err)
		}
		w := worker.New(cl, "parts", func(ctx context.Context, key string, token uint64) { <-ctx.Done() },
			worker.WithWorkerID(id), worker.WithWorkerTTL(time.Second), worker.WithJoin(gossip...))
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = w.Run(ctx)
		}()
		t.Cleanup(func() { cancel(); <-done })
	}
	closed := closedAddr(t)
	startWorker("w-cut", []string{closed})
	startWorker("w-a", urls)
	startWorker("w-b", urls)

	// Reads go to any node (a follower forwards them); a failover in
	// between is retried by the polls.
	get := func(path string, into any) error {
		r, err := send(http.MethodGet, l.url+path, "", nil)
		if err != nil {
			return err
		}
		if r.status != http.StatusOK {
			return fmt.Errorf("GET %s: %d %s", path, r.status, r.body)
		}
		if into != nil {
			return json.Unmarshal(r.body, into)
		}
		return nil
	}
	group := func() (client.Group, error) {
		var g client.Group
		return g, get("/v1/groups/parts", &g)
	}
	targets := func(g client.Group, id string) int {
		n := 0
		for _, k := range g.Keys {
			if k.Target == id {
				n++
			}
		}
		return n
	}
	// The cut worker is alive on gossip, so the balancer plans keys to it.
	harness.WaitUntil(t, 20*time.Second, "the cut worker is given keys", func() bool {
		g, err := group()
		return err == nil && targets(g, "w-cut") > 0
	})
	// Within the grace (and the balancer's checks) it is stuck and has no
	// target left; every key is held by a live worker. A stuck worker is
	// let back after its quarantine and found stuck again, so the state
	// recurs: poll until the group view, the report and the metrics agree.
	stuckLine := regexp.MustCompile(`(?m)^tenure_group_stuck_workers\{group="parts"\} 1$`)
	ownedLine := regexp.MustCompile(`(?m)^tenure_group_keys\{group="parts",state="owned_by_target"\} 12$`)
	harness.WaitFor(t, grace+15*time.Second, func() error {
		g, err := group()
		if err != nil {
			return err
		}
		if n := targets(g, "w-cut"); n > 0 || len(g.Stuck) != 1 || g.Stuck[0] != "w-cut" {
			return fmt.Errorf("w-cut has %d targets, stuck %v", n, g.Stuck)
		}
		for _, k := range g.Keys {
			if k.State != "held" || (k.Worker != "w-a" && k.Worker != "w-b") {
				return fmt.Errorf("%s is %s by %q", k.Key, k.State, k.Worker)
			}
		}
		var h client.PlacementHealth
		if err := get("/v1/health/placement", &h); err != nil {
			return err
		}
		if h.OK || len(h.Stuck) != 1 || h.Stuck[0].Worker != "w-cut" || h.Stuck[0].Group != "parts" {
			return fmt.Errorf("placement health = %+v, want w-cut stuck and ok false", h)
		}
		r, err := send(http.MethodGet, l.url+"/metrics", "", nil)
		if err != nil {
			return err
		}
		if !stuckLine.Match(r.body) || !ownedLine.Match(r.body) {
			return fmt.Errorf("metrics lack %s and %s", stuckLine, ownedLine)
		}
		return nil
	})
}

// closedAddr returns a loopback address on which nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// The placement health report names what is wrong, from any node (a
// follower forwards it to the leader), and the metrics count the group's
// keys by state.
func TestPlacementHealthAndMetrics(t *testing.T) {
	c := startCluster(t, 3)
	l, f := c.follower()
	do(t, http.MethodPut, l.url+"/v1/groups/g", `{"prefix":"g-","count":3,"min_workers":2,"stuck_grace":"1m"}`).wantStatus(t, "put group", 200)
	acquire(t, l, "g-0", "someone")
	acquire(t, l, "other", "h1")

	var group client.Group
	r := do(t, http.MethodGet, l.url+"/v1/groups/g", "")
	r.wantStatus(t, "get group", 200)
	r.decode(t, &group)
	if group.StuckGrace != "1m0s" || group.MinWorkers != 2 {
		t.Errorf("group view: stuck_grace %q, min_workers %d; want 1m0s, 2", group.StuckGrace, group.MinWorkers)
	}

	var h client.PlacementHealth
	r = do(t, http.MethodGet, f.url+"/v1/health/placement", "")
	r.wantStatus(t, "placement health", 200)
	r.decode(t, &h)
	if h.OK {
		t.Errorf("ok = true with a group below its minimum: %+v", h)
	}
	if len(h.BelowMin) != 1 || h.BelowMin[0] != (client.GroupBelowMin{Group: "g", Workers: 0, MinWorkers: 2}) {
		t.Errorf("below_min_workers = %+v, want g with 0 of 2", h.BelowMin)
	}
	var unowned []string
	for _, k := range h.Unowned {
		unowned = append(unowned, k.Key)
		if k.Overdue {
			t.Errorf("%s overdue before its group's grace of 1m", k.Key)
		}
	}
	if len(unowned) != 2 || unowned[0] != "g-1" || unowned[1] != "g-2" {
		t.Errorf("unowned = %v, want [g-1 g-2]", unowned)
	}
	if len(h.Stale) != 0 {
		t.Errorf("stale leases = %+v right after they were acquired", h.Stale)
	}

	// A lease not renewed for longer than the threshold is stale.
	time.Sleep(20 * time.Millisecond)
	r = do(t, http.MethodGet, l.url+"/v1/health/placement?threshold=10ms", "")
	r.wantStatus(t, "placement health with a threshold", 200)
	h = client.PlacementHealth{}
	r.decode(t, &h)
	if len(h.Stale) != 2 || h.Stale[0].Key != "g-0" || h.Stale[0].Holder != "someone" || h.Stale[1].Key != "other" || h.Threshold != "10ms" {
		t.Errorf("stale leases = %+v (threshold %q), want g-0 and other", h.Stale, h.Threshold)
	}

	r = do(t, http.MethodGet, l.url+"/metrics", "")
	r.wantStatus(t, "metrics", 200)
	for _, want := range []string{
		`tenure_group_keys{group="g",state="owned_by_other"} 1`,
		`tenure_group_keys{group="g",state="owned_by_target"} 0`,
		`tenure_group_keys{group="g",state="unowned"} 2`,
		`tenure_group_stuck_workers{group="g"} 0`,
		`tenure_group_draining_workers{group="g"} 0`,
		`tenure_group_workers{group="g"} 0`,             // no worker serves g
		`tenure_group_max_keys_per_worker{group="g"} 0`, // no cap set
		`tenure_group_busiest_worker_keys{group="g"} 1`, // "someone" holds g-0
	} {
		if !regexp.MustCompile("(?m)^" + regexp.QuoteMeta(want) + "$").Match(r.body) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if !regexp.MustCompile(`(?m)^tenure_group_oldest_unowned_seconds\{group="g"\} [0-9.e+-]+$`).Match(r.body) {
		t.Errorf("the leader's metrics lack tenure_group_oldest_unowned_seconds for g")
	}
}
