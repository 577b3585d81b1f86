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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/worker"
)

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

// workerFleet is the in-process workers of one group in a test (or
// subtest). Each has a client.Client of its own, as a process would. They
// are all stopped together when the test ends: Run cancelled, then waited
// for.
type workerFleet struct {
	c      *cluster
	group  string
	runs   *runLog
	ttl    time.Duration
	linger time.Duration // how long a handler works on after its context ended
	// opts, when set, gives each worker the fleet starts (restarts too)
	// options of its own, before start's.
	opts    func(id string) []worker.WorkerOption
	logger  hclog.Logger
	logPath string

	mu      sync.Mutex
	workers []*fleetWorker
}

// fleetWorker is one running worker.Worker.
type fleetWorker struct {
	id     string
	w      *worker.Worker
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
func (f *workerFleet) start(t *testing.T, id string, opts ...worker.WorkerOption) *fleetWorker {
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
	opts = append([]worker.WorkerOption{
		worker.WithWorkerID(id),
		worker.WithWorkerTTL(f.ttl),
		worker.WithGossipAddr("127.0.0.1:0"),
		worker.WithWorkerLogger(f.logger),
	}, opts...)
	if f.opts != nil {
		opts = append(f.opts(id), opts...)
	}
	ctx, cancel := context.WithCancel(context.Background())
	fw := &fleetWorker{id: id, http: cfg.HTTPClient, cancel: cancel, done: make(chan struct{})}
	fw.w = worker.New(cl, f.group, f.runs.handler(id, f.linger), opts...)
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

// restart stops the running worker id (its Run cancelled, then waited for)
// and starts another with the same id and opts, as a supervisor restarts
// a process.
func (f *workerFleet) restart(t *testing.T, id string, opts ...worker.WorkerOption) error {
	f.mu.Lock()
	i := slices.IndexFunc(f.workers, func(fw *fleetWorker) bool { return fw.id == id && !fw.stopped() })
	if i < 0 {
		f.mu.Unlock()
		return fmt.Errorf("no running worker %s to restart", id)
	}
	old := f.workers[i]
	f.workers = slices.Delete(f.workers, i, i+1)
	f.mu.Unlock()
	old.cancel()
	select {
	case <-old.done:
	case <-time.After(stopWorkersTimeout):
		return fmt.Errorf("worker %s: Run did not return within %v of its cancel", id, stopWorkersTimeout)
	}
	old.http.CloseIdleConnections()
	f.start(t, id, opts...)
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

func ids(ws []*fleetWorker) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.id
	}
	return out
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
	return startDemoWorkerEnv(t, c, group, id, ttl, nil)
}

// startDemoWorkerEnv is startDemoWorker with env added to the worker's
// environment.
func startDemoWorkerEnv(t *testing.T, c *cluster, group, id string, ttl time.Duration, env []string) *demoWorker {
	t.Helper()
	p := &demoWorker{id: id, logPath: filepath.Join(t.TempDir(), id+".log"), done: make(chan struct{})}
	out, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(binary, "demo-worker", "-group", group, "-id", id, "-ttl", ttl.String(), "-work", "1s", "-quiet")
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.Env = append(append(cleanEnv(), client.EnvHTTPAddr+"="+strings.Join(placementAddrs(c), ",")), env...)
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
