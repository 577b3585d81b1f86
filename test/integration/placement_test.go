package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client"
)

// The placement of a group's keys over its workers (docs/http-api.md,
// "Groups and placement"), tested against three real servers with
// client.Worker as an application runs it: each worker in-process with a
// client of its own, except the one that is SIGKILLed, which is a
// `tenure demo-worker` process. What users rely on:
//
//  1. every key is owned by exactly one worker, the spread is even and no
//     worker exceeds its maximum: TestPlacementSpreadsEvenly
//  2. a worker that joins takes about 1/N of the keys and nothing else
//     moves: TestPlacementWorkerJoinMovesFewKeys
//  3. the keys of a worker that dies are owned again within TTL plus the
//     gossip failure detection, under larger fencing tokens:
//     TestPlacementKilledWorkerKeysMove
//  4. a drained worker hands each key over only after its handler
//     returned, and the next owner starts soon after:
//     TestPlacementDrainHandsOffWithoutOverlap
//  5. a disabled key is handed back and nobody takes it until it is
//     enabled again: TestPlacementDisabledKeyIsReleased
//  6. a key that comes back to a worker while that worker's handler for it
//     is still finishing is owned again once the handler returned:
//     TestPlacementKeyBackWhileHandingOver
//
// Every test also checks, from the handler runs it recorded, that no two
// handlers of a key ever ran at the same time and that the fencing tokens
// of a key's successive owners increase.

const (
	// placementTTL is the lease TTL of the test workers: short, so that the
	// keys of a killed worker free soon, and twice the servers' min-ttl.
	placementTTL = 2 * time.Second
	// largeFleetTTL is the lease TTL of the tests that run 64 workers in
	// the test process. They share two cores with the race detector and
	// the three servers; with a 2s TTL their renewals came late so often
	// that leases expired and keys churned without end (a dozen grants per
	// key in 90s, never settling). What those tests check does not depend
	// on the TTL, so they use the worker's default.
	largeFleetTTL = 10 * time.Second
	// settleTimeout bounds how long a group may take to settle: every key
	// owned by its target, whose handler runs.
	settleTimeout = 90 * time.Second
	// stopWorkersTimeout bounds how long the workers of a test may take to
	// stop (hand back their keys, leave gossip) once cancelled.
	stopWorkersTimeout = 30 * time.Second
)

// handlerRun is one run of a handler for a key: from the moment the
// handler was called to the moment it returned, on the test's monotonic
// clock (durations since the log's origin).
type handlerRun struct {
	worker     string
	token      uint64
	start, end time.Duration
	running    bool
	stopping   bool // its context ended; it has not returned yet
}

// runLog records every handler run of every key of the in-process workers
// of a test. Its handlers hold the key until their context ends.
type runLog struct {
	origin time.Time

	mu   sync.Mutex
	runs map[string][]*handlerRun // by key, in the order they started
}

func newRunLog() *runLog {
	return &runLog{origin: time.Now(), runs: make(map[string][]*handlerRun)}
}

// now is the time since the log's origin: monotonic, shared by every worker
// of the test.
func (l *runLog) now() time.Duration { return time.Since(l.origin) }

// handler returns the handler of worker: it records its start, works until
// ctx ends, finishes its work for linger more, and records its return.
func (l *runLog) handler(worker string, linger time.Duration) client.Handler {
	return func(ctx context.Context, key string, token uint64) {
		l.mu.Lock()
		r := &handlerRun{worker: worker, token: token, start: l.now(), running: true}
		l.runs[key] = append(l.runs[key], r)
		l.mu.Unlock()

		<-ctx.Done()
		if linger > 0 {
			l.mu.Lock()
			r.stopping = true
			l.mu.Unlock()
			<-time.After(linger) // the last of the work, e.g. a flush
		}

		l.mu.Lock()
		r.end, r.running, r.stopping = l.now(), false, false
		l.mu.Unlock()
	}
}

// running returns the runs of key that have not returned yet.
func (l *runLog) running(key string) []handlerRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []handlerRun
	for _, r := range l.runs[key] {
		if r.running {
			out = append(out, *r)
		}
	}
	return out
}

// working returns the runs of key whose context has not ended: the
// handlers that own the key.
func (l *runLog) working(key string) []handlerRun {
	var out []handlerRun
	for _, r := range l.running(key) {
		if !r.stopping {
			out = append(out, r)
		}
	}
	return out
}

// runningOf returns the keys whose handler runs now on worker.
func (l *runLog) runningOf(worker string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for key, runs := range l.runs {
		for _, r := range runs {
			if r.running && r.worker == worker {
				out = append(out, key)
			}
		}
	}
	sort.Strings(out)
	return out
}

// history returns a copy of the runs of key, in the order they started.
func (l *runLog) history(key string) []handlerRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]handlerRun, len(l.runs[key]))
	for i, r := range l.runs[key] {
		out[i] = *r
	}
	return out
}

// startedSince returns, by key, the runs that started at or after from.
func (l *runLog) startedSince(from time.Duration) map[string][]handlerRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]handlerRun{}
	for key, runs := range l.runs {
		for _, r := range runs {
			if r.start >= from {
				out[key] = append(out[key], *r)
			}
		}
	}
	return out
}

// checkExclusive reports every key on which a handler started before the
// previous one returned, and every hand-over to another worker whose
// token did not grow.
func (l *runLog) checkExclusive(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	keys, hand := 0, 0
	for key, runs := range l.runs {
		keys++
		for i := 1; i < len(runs); i++ {
			prev, cur := runs[i-1], runs[i]
			if prev.running || cur.start < prev.end {
				end := "still running"
				if !prev.running {
					end = fmt.Sprintf("returned at %v", prev.end)
				}
				t.Errorf("%s: %s's handler started at %v while %s's (token %d) had not returned (%s)",
					key, cur.worker, cur.start, prev.worker, prev.token, end)
			}
			if cur.worker != prev.worker {
				hand++
				if cur.token <= prev.token {
					t.Errorf("%s: %s got token %d after %s had token %d: fencing tokens must grow",
						key, cur.worker, cur.token, prev.worker, prev.token)
				}
			}
		}
	}
	t.Logf("exclusive: %d keys, %d hand-overs between workers, no overlap seen", keys, hand)
}

// workerFleet is the in-process workers of one group in a test (or
// subtest). Each has a client.Client of its own, as a process would. They
// are all stopped together when the test ends: Run cancelled, then waited
// for.
type workerFleet struct {
	c       *cluster
	group   string
	runs    *runLog
	ttl     time.Duration
	linger  time.Duration // how long a handler works on after its context ended
	logger  hclog.Logger
	logPath string

	mu      sync.Mutex
	workers []*fleetWorker
}

// fleetWorker is one running client.Worker.
type fleetWorker struct {
	id     string
	w      *client.Worker
	http   *http.Client
	cancel context.CancelFunc
	done   chan struct{} // closed when Run has returned
	err    error         // Run's result, set before done is closed
}

func (fw *fleetWorker) stopped() bool {
	select {
	case <-fw.done:
		return true
	default:
		return false
	}
}

// newWorkerFleet returns an empty fleet for group whose workers hold their
// leases with ttl and whose handlers record in runs. The workers log at
// debug level to one file, whose tail t prints if it fails.
func newWorkerFleet(t *testing.T, c *cluster, group string, ttl time.Duration, runs *runLog) *workerFleet {
	t.Helper()
	f := &workerFleet{c: c, group: group, runs: runs, ttl: ttl, logPath: filepath.Join(t.TempDir(), "workers.log")}
	out, err := os.Create(f.logPath)
	if err != nil {
		t.Fatal(err)
	}
	f.logger = hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Debug})
	t.Cleanup(func() {
		f.stopAll(t)
		out.Close()
		if t.Failed() {
			t.Logf("last lines of the workers' log (%s):\n%s", f.logPath, tail(f.logPath, 60))
		}
	})
	return f
}

// start runs one more worker with id and opts (on top of the fleet's TTL
// and a gossip port of its own on loopback).
func (f *workerFleet) start(t *testing.T, id string, opts ...client.WorkerOption) *fleetWorker {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Addresses = placementAddrs(f.c)
	cfg.Holder = id
	cfg.Timeout = 5 * time.Second
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	cfg.HTTPClient = &http.Client{Transport: tr}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	opts = append([]client.WorkerOption{
		client.WithWorkerID(id),
		client.WithWorkerTTL(f.ttl),
		client.WithGossipAddr("127.0.0.1:0"),
		client.WithWorkerLogger(f.logger),
	}, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	fw := &fleetWorker{id: id, http: cfg.HTTPClient, cancel: cancel, done: make(chan struct{})}
	fw.w = cl.Worker(f.group, f.runs.handler(id, f.linger), opts...)
	go func() {
		fw.err = fw.w.Run(ctx)
		close(fw.done)
	}()
	f.mu.Lock()
	f.workers = append(f.workers, fw)
	f.mu.Unlock()
	return fw
}

// startN starts n workers named prefix-0 … prefix-(n-1).
func (f *workerFleet) startN(t *testing.T, prefix string, n int) []*fleetWorker {
	t.Helper()
	out := make([]*fleetWorker, n)
	for i := range out {
		out[i] = f.start(t, fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}

// alive returns an error naming a worker whose Run returned early.
func (f *workerFleet) alive() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fw := range f.workers {
		if fw.stopped() {
			return fmt.Errorf("worker %s stopped on its own: Run returned %v", fw.id, fw.err)
		}
	}
	return nil
}

// stopAll cancels every worker at once, then waits for each Run to return
// (each hands its keys back and leaves gossip), and reports a Run that
// ended with anything but its context's error.
func (f *workerFleet) stopAll(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	workers := slices.Clone(f.workers)
	f.mu.Unlock()
	for _, fw := range workers {
		fw.cancel()
	}
	deadline := time.After(stopWorkersTimeout)
	for _, fw := range workers {
		select {
		case <-fw.done:
		case <-deadline:
			t.Errorf("worker %s: Run did not return within %v of its cancel", fw.id, stopWorkersTimeout)
			return
		}
		if !errors.Is(fw.err, context.Canceled) {
			t.Errorf("worker %s: Run returned %v, want context.Canceled", fw.id, fw.err)
		}
		fw.http.CloseIdleConnections()
	}
}

// startPlacement starts three servers, an operator's client, a group of
// keys named group/0 … and an empty fleet of workers for it whose leases
// last ttl.
func startPlacement(t *testing.T, group string, keys int, ttl time.Duration) (*cluster, *client.Client, *runLog, *workerFleet) {
	t.Helper()
	c := startCluster(t, 3)
	admin := adminClient(t, c)
	runs := newRunLog()
	putGroup(t, admin, group, group+"/", keys, 0)
	return c, admin, runs, newWorkerFleet(t, c, group, ttl, runs)
}

// placementAddrs returns the HTTP addresses of every node of c.
func placementAddrs(c *cluster) []string {
	addrs := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		addrs[i] = nd.httpAddr
	}
	return addrs
}

// adminClient is the client of an operator: it creates groups, reads them
// and sets controls.
func adminClient(t *testing.T, c *cluster) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Addresses = placementAddrs(c)
	cfg.Holder = "placement-admin"
	cfg.Timeout = 5 * time.Second
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	return cl
}

// putGroup creates group with count keys named prefix0 … and maxPerWorker.
func putGroup(t *testing.T, admin *client.Client, name, prefix string, count, maxPerWorker int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sum, err := admin.Groups().Put(ctx, name, client.GroupSpec{Prefix: prefix, Count: count, MaxPerWorker: maxPerWorker})
	if err != nil {
		t.Fatalf("create group %s: %v", name, err)
	}
	if sum.Keys != count || sum.MaxPerWorker != maxPerWorker {
		t.Fatalf("create group %s: got %+v, want %d keys, max_per_worker %d", name, sum, count, maxPerWorker)
	}
}

// groupView reads the group (a linearizable read).
func groupView(admin *client.Client, name string) (*client.Group, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, _, err := admin.Groups().Get(ctx, name, nil)
	if err != nil {
		return nil, fmt.Errorf("get group %s: %w", name, err)
	}
	return g, nil
}

// view returns the group's view, or an error when a worker of the fleet
// stopped on its own.
func (f *workerFleet) view(admin *client.Client) (*client.Group, error) {
	if err := f.alive(); err != nil {
		return nil, err
	}
	return groupView(admin, f.group)
}

// settledView is view, then settled: the group and its holders, or why it
// has not settled.
func (f *workerFleet) settledView(admin *client.Client, owners []string, owned int) (*client.Group, map[string]string, error) {
	g, err := f.view(admin)
	if err != nil {
		return nil, nil, err
	}
	h, err := settled(g, f.runs, owners, owned)
	return g, h, err
}

// settled checks that the group is at rest: every key that has a target is
// held by it, under the lease the group shows, and exactly that worker's
// handler runs for it; every key without a target is free and no handler
// runs for it; owned keys have an owner; only workers in owners own keys.
// It returns the holder of each owned key.
func settled(g *client.Group, runs *runLog, owners []string, owned int) (map[string]string, error) {
	may := make(map[string]bool, len(owners))
	for _, w := range owners {
		may[w] = true
	}
	holders := make(map[string]string, len(g.Keys))
	for _, k := range g.Keys {
		running := runs.working(k.Key)
		if k.Target == "" {
			if k.State != "free" || len(running) > 0 {
				return nil, fmt.Errorf("%s has no target but is %s by %q, %d handlers run", k.Key, k.State, k.Worker, len(running))
			}
			continue
		}
		if !may[k.Target] {
			return nil, fmt.Errorf("%s targets %q, not one of the workers that may own keys", k.Key, k.Target)
		}
		if k.State != "held" || k.Worker != k.Target {
			return nil, fmt.Errorf("%s targets %s but is %s by %q", k.Key, k.Target, k.State, k.Worker)
		}
		if len(running) != 1 || running[0].worker != k.Worker || running[0].token != k.Token {
			return nil, fmt.Errorf("%s is held by %s with token %d, but the handlers working on it are %+v", k.Key, k.Worker, k.Token, running)
		}
		holders[k.Key] = k.Worker
	}
	if len(holders) != owned {
		return nil, fmt.Errorf("%d of %d keys owned, want %d", len(holders), len(g.Keys), owned)
	}
	return holders, nil
}

// waitSettled polls the group until settled accepts it and returns the
// holders and the time it took.
func waitSettled(t *testing.T, admin *client.Client, f *workerFleet, owners []string, owned int, timeout time.Duration) (map[string]string, time.Duration) {
	t.Helper()
	start := time.Now()
	var holders map[string]string
	poll.WaitFor(t, timeout, func() error {
		var err error
		_, holders, err = f.settledView(admin, owners, owned)
		return err
	})
	return holders, time.Since(start)
}

// countByWorker counts the keys of each worker in owners (0 for those
// without keys).
func countByWorker(holders map[string]string, owners []string) map[string]int {
	out := make(map[string]int, len(owners))
	for _, w := range owners {
		out[w] = 0
	}
	for _, w := range holders {
		out[w]++
	}
	return out
}

// checkEven fails t unless the keys are spread as evenly as possible: no
// worker above ceil(K/N), none below floor(K/N).
func checkEven(t *testing.T, holders map[string]string, owners []string) {
	t.Helper()
	k, n := len(holders), len(owners)
	lo, hi := k/n, (k+n-1)/n
	counts := countByWorker(holders, owners)
	least, most := k, 0
	for _, w := range owners {
		c := counts[w]
		least, most = min(least, c), max(most, c)
		if c < lo || c > hi {
			t.Errorf("%s owns %d keys, want %d to %d (%d keys over %d workers)", w, c, lo, hi, k, n)
		}
	}
	t.Logf("%d keys over %d workers: %d to %d keys each", k, n, least, most)
}

func ids(ws []*fleetWorker) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.id
	}
	return out
}

// TestPlacementSpreadsEvenly: 1024 keys over 64 workers settle with every
// key owned by exactly one worker (its handler runs, and the group shows
// it as holder and target), 16 keys each. With a per-worker maximum and
// capacities that cannot take every key, each worker owns exactly its
// limit and the rest of the keys stay free.
func TestPlacementSpreadsEvenly(t *testing.T) {
	c := startCluster(t, 3)
	admin := adminClient(t, c)

	t.Run("1024 keys over 64 workers", func(t *testing.T) {
		const keys, workers = 1024, 64
		runs := newRunLog()
		putGroup(t, admin, "partitions", "partitions/", keys, 0)
		f := newWorkerFleet(t, c, "partitions", largeFleetTTL, runs)
		owners := ids(f.startN(t, "spread", workers))
		holders, took := waitSettled(t, admin, f, owners, keys, settleTimeout)
		t.Logf("%d workers started to %d keys owned: %v", workers, keys, took.Round(time.Millisecond))
		checkEven(t, holders, owners)
		runs.checkExclusive(t)
	})

	t.Run("max_per_worker and capacities", func(t *testing.T) {
		// 64 keys, max 6 per worker, 8 workers of which two take at most 4:
		// 6·6 + 2·4 = 44 keys owned, 20 without an owner.
		const keys, maxPerWorker = 64, 6
		runs := newRunLog()
		putGroup(t, admin, "bounded", "bounded/", keys, maxPerWorker)
		f := newWorkerFleet(t, c, "bounded", placementTTL, runs)
		limit := map[string]int{}
		var owners []string
		for i := range 8 {
			id := fmt.Sprintf("bounded-%d", i)
			limit[id] = maxPerWorker
			if i < 2 {
				f.start(t, id, client.WithCapacity(4))
				limit[id] = 4
			} else {
				f.start(t, id)
			}
			owners = append(owners, id)
		}
		const owned = 6*6 + 2*4
		holders, took := waitSettled(t, admin, f, owners, owned, settleTimeout)
		t.Logf("8 workers started to %d keys owned: %v", owned, took.Round(time.Millisecond))
		for w, n := range countByWorker(holders, owners) {
			if n != limit[w] {
				t.Errorf("%s owns %d keys, want its limit %d (the group has more keys than the workers take)", w, n, limit[w])
			}
		}
		runs.checkExclusive(t)
	})
}

// TestPlacementWorkerJoinMovesFewKeys: once 1024 keys are settled over 64
// workers, a 65th joins. It takes its share and nothing else moves: every
// key whose handler started after the join started on the new worker, and
// at most ceil(1024/65) = 16 keys moved.
//
// Why exactly the new worker's share: the plan is sticky and bounded, so an
// existing worker keeps its keys up to its new quota and gives up only the
// ones over it, which only the new worker has room for. No slack is
// allowed: a key moved between two existing workers would break the second
// assertion anyway.
func TestPlacementWorkerJoinMovesFewKeys(t *testing.T) {
	const keys, workers = 1024, 64
	_, admin, runs, f := startPlacement(t, "partitions", keys, largeFleetTTL)
	owners := ids(f.startN(t, "join", workers))
	before, took := waitSettled(t, admin, f, owners, keys, settleTimeout)
	t.Logf("%d keys over %d workers settled in %v", keys, workers, took.Round(time.Millisecond))

	joinedAt := runs.now()
	newcomer := f.start(t, "join-new").id
	owners = append(owners, newcomer)
	n := len(owners)
	share := keys / n
	var after map[string]string
	start := time.Now()
	poll.WaitFor(t, settleTimeout, func() error {
		_, h, err := f.settledView(admin, owners, keys)
		if err != nil {
			return err
		}
		if got := countByWorker(h, owners)[newcomer]; got < share {
			return fmt.Errorf("%s owns %d keys, want its share %d", newcomer, got, share)
		}
		after = h
		return nil
	})
	t.Logf("%s owns its share %v after it started", newcomer, time.Since(start).Round(time.Millisecond))

	var moved []string
	for key, w := range after {
		if before[key] != w {
			moved = append(moved, key)
			if w != newcomer {
				t.Errorf("%s moved from %s to %s, want only moves to the new worker %s", key, before[key], w, newcomer)
			}
		}
	}
	for key, rs := range runs.startedSince(joinedAt) {
		for _, r := range rs {
			if r.worker != newcomer {
				t.Errorf("%s: %s's handler started after %s joined (token %d): only the new worker may take keys", key, r.worker, newcomer, r.token)
			}
		}
	}
	bound := (keys + n - 1) / n
	if len(moved) > bound {
		t.Errorf("%d of %d keys moved when worker %d joined, want at most ceil(%d/%d) = %d", len(moved), keys, n, keys, n, bound)
	}
	t.Logf("%d of %d keys moved to the new worker (bound %d)", len(moved), keys, bound)
	checkEven(t, after, owners)
	runs.checkExclusive(t)
}

// demoWorker is a `tenure demo-worker` process.
type demoWorker struct {
	id      string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
}

// startDemoWorker runs `tenure demo-worker` of group with id and ttl,
// talking to every node of c. Its output goes to a file that t prints if it
// fails; the process is killed by its pid when t ends.
func startDemoWorker(t *testing.T, c *cluster, group, id string, ttl time.Duration) *demoWorker {
	t.Helper()
	p := &demoWorker{id: id, logPath: filepath.Join(t.TempDir(), id+".log"), done: make(chan struct{})}
	out, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(binary, "demo-worker", "-group", group, "-id", id, "-ttl", ttl.String(), "-work", "1s", "-quiet")
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.Env = append(cleanEnv(), client.EnvHTTPAddr+"="+strings.Join(placementAddrs(c), ","))
	p.cmd.SysProcAttr = childProcAttr()
	if err := p.cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("start tenure demo-worker: %v", err)
	}
	go func() {
		p.cmd.Wait()
		out.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("output of demo-worker %s (%s):\n%s", id, p.logPath, tail(p.logPath, 30))
		}
	})
	return p
}

// kill sends SIGKILL to the process and waits until it is gone.
func (p *demoWorker) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// TestPlacementKilledWorkerKeysMove: 32 keys over three in-process workers
// and one `tenure demo-worker` process with a 2s TTL. The process is
// SIGKILLed, so it neither releases its leases nor leaves gossip: its keys
// are owned by the other three once its leases expired and gossip declared
// it dead, each under a token larger than the killed worker's. The bound
// asserted is TTL + 15s: the suspicion timeout of memberlist's LAN
// defaults is 4s with two confirmations from other members (measured: 6s
// in all, of which the leases took 2s).
func TestPlacementKilledWorkerKeysMove(t *testing.T) {
	const keys = 32
	c, admin, runs, f := startPlacement(t, "partitions", keys, placementTTL)
	survivors := ids(f.startN(t, "stay", 3))
	victim := startDemoWorker(t, c, "partitions", "doomed", placementTTL)
	owners := append(slices.Clone(survivors), victim.id)

	// The demo worker's handlers are not in runs: check its keys from the
	// group alone.
	var doomed map[string]uint64 // its keys and their tokens
	poll.WaitFor(t, settleTimeout, func() error {
		g, err := f.view(admin)
		if err != nil {
			return err
		}
		doomed = map[string]uint64{}
		inProcess := &client.Group{Name: g.Name}
		for _, k := range g.Keys {
			if k.Target == victim.id {
				if k.State != "held" || k.Worker != victim.id {
					return fmt.Errorf("%s targets %s but is %s by %q", k.Key, victim.id, k.State, k.Worker)
				}
				doomed[k.Key] = k.Token
				continue
			}
			inProcess.Keys = append(inProcess.Keys, k)
		}
		if len(doomed) != keys/len(owners) {
			return fmt.Errorf("%s owns %d keys, want %d", victim.id, len(doomed), keys/len(owners))
		}
		_, err = settled(inProcess, runs, survivors, keys-len(doomed))
		return err
	})

	killed := time.Now()
	victim.kill()
	bound := placementTTL + 15*time.Second
	var (
		after   *client.Group
		expired time.Duration // when none of its keys was held by it any more
	)
	poll.WaitFor(t, bound, func() error {
		g, err := f.view(admin)
		if err != nil {
			return err
		}
		if expired == 0 && !slices.ContainsFunc(g.Keys, func(k client.GroupKey) bool { return k.State == "held" && k.Worker == victim.id }) {
			expired = time.Since(killed)
		}
		if _, err := settled(g, runs, survivors, keys); err != nil {
			return err
		}
		after = g
		return nil
	})
	t.Logf("the killed worker's %d leases were gone %v after SIGKILL, its keys owned again after %v (TTL %v; bound %v)",
		len(doomed), expired.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond), placementTTL, bound)
	for _, k := range after.Keys {
		if old, ok := doomed[k.Key]; ok && k.Token <= old {
			t.Errorf("%s: %s holds it with token %d, not above the killed worker's %d", k.Key, k.Worker, k.Token, old)
		}
	}
	checkEven(t, heldBy(after), survivors)
	runs.checkExclusive(t)
}

// heldBy returns the holder of every held key of g.
func heldBy(g *client.Group) map[string]string {
	out := map[string]string{}
	for _, k := range g.Keys {
		if k.State == "held" {
			out[k.Key] = k.Worker
		}
	}
	return out
}

// TestPlacementDrainHandsOffWithoutOverlap: 60 keys over six workers. A
// worker drained in-process (Worker.Drain), then another drained by an
// operator (DrainWorker), hands every key back: Drain returns once it
// holds nothing, each of its keys is then owned by another worker, whose
// handler started after the drained worker's handler for that key returned
// and within a short gap (the next owner was queued with a blocking
// acquire, so the gap is the release's commit and the answer).
func TestPlacementDrainHandsOffWithoutOverlap(t *testing.T) {
	const keys = 60
	// maxGap is generous (the gaps measured are tens of milliseconds under
	// the race detector) but below the TTL: a hand-off that waited for the
	// lease to expire, rather than for its release, fails.
	const maxGap = time.Second
	_, admin, runs, f := startPlacement(t, "partitions", keys, placementTTL)
	// Handlers finish their work for a while after their context ends, as
	// real ones do (a flush, a commit of offsets): the key must not be
	// handed over before they return.
	f.linger = 200 * time.Millisecond
	workers := f.startN(t, "drain", 6)
	owners := ids(workers)
	holders, _ := waitSettled(t, admin, f, owners, keys, settleTimeout)

	// handedOver checks, for every key the drained worker owned, that the
	// next run started after its run returned, within maxGap, on a worker
	// that owns it now, and returns the largest gap.
	handedOver := func(t *testing.T, drained string, owned []string, now map[string]string) time.Duration {
		t.Helper()
		var worst time.Duration
		for _, key := range owned {
			hist := runs.history(key)
			i := -1
			for j, r := range hist {
				if r.worker == drained {
					i = j
				}
			}
			if i < 0 || i+1 >= len(hist) {
				t.Errorf("%s: no run after %s's: %+v", key, drained, hist)
				continue
			}
			prev, next := hist[i], hist[i+1]
			if next.worker != now[key] {
				t.Errorf("%s: %s ran it after %s, but %s owns it now", key, next.worker, drained, now[key])
			}
			gap := next.start - prev.end
			worst = max(worst, gap)
			if gap < 0 {
				t.Errorf("%s: %s's handler started %v before %s's returned", key, next.worker, -gap, drained)
			} else if gap > maxGap {
				t.Errorf("%s: %s's handler started %v after %s's returned, want at most %v", key, next.worker, gap, drained, maxGap)
			}
		}
		return worst
	}
	ownedBy := func(h map[string]string, w string) []string {
		var out []string
		for key, owner := range h {
			if owner == w {
				out = append(out, key)
			}
		}
		sort.Strings(out)
		return out
	}

	t.Run("Worker.Drain", func(t *testing.T) {
		w := workers[0]
		mine := ownedBy(holders, w.id)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		if err := w.w.Drain(ctx); err != nil {
			t.Fatalf("Drain: %v", err)
		}
		took := time.Since(start)
		if got := w.w.Keys(); len(got) > 0 {
			t.Errorf("after Drain, %s still holds %v", w.id, got)
		}
		if got := runs.runningOf(w.id); len(got) > 0 {
			t.Errorf("after Drain, %s's handlers still run for %v", w.id, got)
		}
		owners = slices.DeleteFunc(owners, func(id string) bool { return id == w.id })
		now, settledIn := waitSettled(t, admin, f, owners, keys, 10*time.Second)
		gap := handedOver(t, w.id, mine, now)
		t.Logf("Drain of %d keys returned in %v; all owned again %v later; longest hand-off gap %v",
			len(mine), took.Round(time.Millisecond), settledIn.Round(time.Millisecond), gap.Round(time.Microsecond))
		checkEven(t, now, owners)
		holders = now
	})

	t.Run("operator DrainWorker", func(t *testing.T) {
		w := workers[1]
		mine := ownedBy(holders, w.id)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		if err := admin.Groups().DrainWorker(ctx, w.id, true); err != nil {
			t.Fatalf("DrainWorker: %v", err)
		}
		poll.WaitFor(t, 30*time.Second, func() error {
			g, err := groupView(admin, f.group)
			if err != nil {
				return err
			}
			for _, k := range g.Keys {
				if k.Worker == w.id && k.State == "held" {
					return fmt.Errorf("%s still holds %s", w.id, k.Key)
				}
			}
			if got := runs.runningOf(w.id); len(got) > 0 {
				return fmt.Errorf("%s's handlers still run for %v", w.id, got)
			}
			return nil
		})
		took := time.Since(start)
		owners = slices.DeleteFunc(owners, func(id string) bool { return id == w.id })
		now, settledIn := waitSettled(t, admin, f, owners, keys, 10*time.Second)
		gap := handedOver(t, w.id, mine, now)
		t.Logf("DrainWorker: %d keys handed back in %v; all owned again %v later; longest hand-off gap %v",
			len(mine), took.Round(time.Millisecond), settledIn.Round(time.Millisecond), gap.Round(time.Microsecond))
		checkEven(t, now, owners)
	})
	runs.checkExclusive(t)
}

// TestPlacementDisabledKeyIsReleased: an operator disables a held key: its
// holder's handler ends and the lease is released (not left to expire);
// nobody takes the key
// while it stays disabled, though every worker runs; enabled again, it
// gets an owner with a larger token.
func TestPlacementDisabledKeyIsReleased(t *testing.T) {
	const keys = 16
	const quiet = 3 * time.Second
	_, admin, runs, f := startPlacement(t, "partitions", keys, placementTTL)
	owners := ids(f.startN(t, "ctl", 3))
	holders, _ := waitSettled(t, admin, f, owners, keys, settleTimeout)

	const key = "partitions/7"
	holder := holders[key]
	run := runs.running(key)
	if len(run) != 1 {
		t.Fatalf("%s: %d handlers run, want 1", key, len(run))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := admin.Groups().SetControl(ctx, key, client.KeyControl{Disabled: true}); err != nil {
		t.Fatalf("disable %s: %v", key, err)
	}
	free := func() error {
		if err := f.alive(); err != nil {
			return err
		}
		if got := runs.running(key); len(got) > 0 {
			return fmt.Errorf("%s: handlers run: %+v", key, got)
		}
		g, err := groupView(admin, f.group)
		if err != nil {
			return err
		}
		for _, k := range g.Keys {
			if k.Key == key && (k.State != "free" || !k.Disabled || k.Target != "") {
				return fmt.Errorf("%s is %s by %q, target %q, disabled %v; want free, no target, disabled", key, k.State, k.Worker, k.Target, k.Disabled)
			}
		}
		return nil
	}
	poll.WaitFor(t, 15*time.Second, free)
	t.Logf("disabled %s: %s's handler returned and the key was free %v later", key, holder, time.Since(start).Round(time.Millisecond))
	l, _, err := admin.Leases().Get(ctx, key, nil)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if l.Reason != client.ReasonReleased || l.Metadata["worker"] != holder || l.Token != run[0].token {
		t.Errorf("%s is free with reason %q, last worker %s, token %d; want released by %s, token %d",
			key, l.Reason, l.Metadata["worker"], l.Token, holder, run[0].token)
	}
	poll.Holds(t, quiet, free)
	if _, err := settled(mustView(t, admin, f.group), runs, owners, keys-1); err != nil {
		t.Errorf("with %s disabled: %v", key, err)
	}

	if err := admin.Groups().SetControl(ctx, key, client.KeyControl{}); err != nil {
		t.Fatalf("enable %s: %v", key, err)
	}
	start = time.Now()
	holders, _ = waitSettled(t, admin, f, owners, keys, 15*time.Second)
	t.Logf("enabled %s: owned by %s %v later", key, holders[key], time.Since(start).Round(time.Millisecond))
	if now := runs.running(key); len(now) != 1 || now[0].token <= run[0].token {
		t.Errorf("%s after enable: running %+v, want one handler with a token above %d", key, now, run[0].token)
	}
	runs.checkExclusive(t)
}

func mustView(t *testing.T, admin *client.Client, group string) *client.Group {
	t.Helper()
	g, err := groupView(admin, group)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestPlacementKeyBackWhileHandingOver: a key that comes back to its worker
// while the worker's handler for it is still finishing its work (3s after
// its context ended) is owned again by that worker once the handler
// returned; it must not stay without an owner until some later change of
// the group.
func TestPlacementKeyBackWhileHandingOver(t *testing.T) {
	const keys = 4
	const linger = 3 * time.Second
	_, admin, runs, f := startPlacement(t, "partitions", keys, placementTTL)
	f.linger = linger
	owners := ids(f.startN(t, "back", 1))
	waitSettled(t, admin, f, owners, keys, settleTimeout)

	const key = "partitions/1"
	first := runs.running(key)
	if len(first) != 1 {
		t.Fatalf("%s: %d handlers run, want 1", key, len(first))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := admin.Groups().SetControl(ctx, key, client.KeyControl{Disabled: true}); err != nil {
		t.Fatalf("disable %s: %v", key, err)
	}
	poll.WaitFor(t, 10*time.Second, func() error {
		h := runs.history(key)
		if last := h[len(h)-1]; !last.stopping {
			return fmt.Errorf("%s: the handler was not told to stop: %+v", key, last)
		}
		return nil
	})
	if err := admin.Groups().SetControl(ctx, key, client.KeyControl{}); err != nil {
		t.Fatalf("enable %s: %v", key, err)
	}
	enabled := time.Now()
	if h := runs.history(key); !h[len(h)-1].stopping {
		t.Fatalf("%s: the handler returned before the key was enabled again; linger %v is too short for this test", key, linger)
	}
	waitSettled(t, admin, f, owners, keys, linger+10*time.Second)
	t.Logf("%s was owned again %v after it was enabled (its previous handler worked on for %v)", key, time.Since(enabled).Round(time.Millisecond), linger)
	if now := runs.working(key); now[0].token <= first[0].token {
		t.Errorf("%s: token %d after it came back, want above %d", key, now[0].token, first[0].token)
	}
	runs.checkExclusive(t)
}
