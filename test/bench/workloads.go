package bench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Env is what a workload run needs: its duration, where progress goes, and
// the state kept across runs (bulk holders' leases, populations).
type Env struct {
	Options
	Progress io.Writer

	runCtx context.Context // lives as long as the whole comparison
	armCtx context.Context // lives as long as the current etcd arm
	arm    Arm
	label  string // "round 1/3 acquire-64 tenure"
	run    int    // run counter, for fresh keys
	st     *state
}

// state is what runs share; copies of an Env share it.
type state struct {
	mu    sync.Mutex
	cache map[string]any
	pop   map[string]*int
}

// quiet is env without progress lines and with duration d.
func (env *Env) quiet(d time.Duration) *Env {
	q := *env
	q.Progress = nil
	q.Duration = d
	return &q
}

// probeTimeout bounds each attempt of a failover probe: a second, or
// 100ms in an arm at tenure's Raft timings (for both systems).
func (env *Env) probeTimeout() time.Duration {
	if env.arm.TenureTimings {
		return 100 * time.Millisecond
	}
	return time.Second
}

// key is a key (or holder) unique to the current run.
func (env *Env) key(kind string, i int) string {
	return fmt.Sprintf("bench/%d/%s/%d", env.run, kind, i)
}

// cached returns the value under name, made by mk the first time.
func (env *Env) cached(name string, mk func() any) any {
	env.st.mu.Lock()
	defer env.st.mu.Unlock()
	if env.st.cache == nil {
		env.st.cache = map[string]any{}
	}
	v, ok := env.st.cache[name]
	if !ok {
		v = mk()
		env.st.cache[name] = v
	}
	return v
}

// population is the count of pop/ leases the system holds.
func (env *Env) population(system string) *int {
	env.st.mu.Lock()
	defer env.st.mu.Unlock()
	if env.st.pop == nil {
		env.st.pop = map[string]*int{}
	}
	if env.st.pop[system] == nil {
		env.st.pop[system] = new(int)
	}
	return env.st.pop[system]
}

// ensurePopulation makes system hold at least n pop/ leases, creating
// those missing with add. It measures the resident memory of one follower
// before and after (the same process), and keeps the growth per lease
// added for memoryPerLease.
func (env *Env) ensurePopulation(ctx context.Context, system string, n int, follower func() (int, error),
	add func(ctx context.Context, k int) error) error {
	have := env.population(system)
	if *have >= n {
		return nil
	}
	pid, err := follower()
	if err != nil {
		return err
	}
	before, err := rss(pid)
	if err != nil {
		return err
	}
	if err := fill(ctx, env, "adding leases", *have, n, add); err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // let the follower apply
	after, err := rss(pid)
	if err != nil {
		return fmt.Errorf("follower memory after adding leases: %w", err)
	}
	perLease := float64(after-before) / float64(n-*have)
	*env.cached(fmt.Sprintf("%s-memory-%d", system, n), func() any { return new(float64) }).(*float64) = perLease
	*have = n
	return nil
}

// fill calls f for every k in [from, to) with 64 goroutines, printing
// progress every 10%.
func fill(ctx context.Context, env *Env, what string, from, to int, f func(ctx context.Context, k int) error) error {
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	step := max(int64((to-from)/10), 1)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				k := next.Add(1) - 1
				if k >= int64(to) {
					return
				}
				if err := f(ctx, int(k)); err != nil {
					once.Do(func() { first = fmt.Errorf("lease %d: %w", k, err) })
					return
				}
				if (k-int64(from))%step == 0 && env.Progress != nil {
					fmt.Fprintf(env.Progress, "  %s: %s %d/%d\n", env.label, what, k, to)
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// Workload is one line of the comparison.
type Workload struct {
	Name string
	// Unit of Result.Value; HigherBetter says which way is better.
	Unit         string
	HigherBetter bool
	// Population is how many live leases the systems hold for this
	// workload (0: none beyond the other workloads').
	Population int
	// Phase orders the workloads' runs: all rounds of one phase (and
	// population) before the next, since some leave leases behind until
	// their After: the plain workloads (0), the failover without leases
	// (1), the bulk renewal (2), then those with a population, by it (3).
	Phase int
	// Failover: the workload kills the leader (failoverWorkload).
	Failover bool
	// After, when set, runs once after the last round of the workload
	// against each system (etcd nil when it is not run): it removes what
	// the workload left.
	After  func(ctx context.Context, env *Env, t *Tenure, e *Etcd) error
	Tenure func(ctx context.Context, env *Env, t *Tenure) (Result, error)
	Etcd   func(ctx context.Context, env *Env, e *Etcd) (Result, error)
}

// Workloads are the workloads Options select, in report order.
func Workloads(o Options) []Workload {
	var ws []Workload
	for _, n := range []int{1, 16, 64, 256} {
		ws = append(ws, Workload{
			Name: fmt.Sprintf("acquire+release, %d client%s", n, map[bool]string{true: "", false: "s"}[n == 1]), Unit: "acq/s", HigherBetter: true,
			Tenure: func(ctx context.Context, env *Env, t *Tenure) (Result, error) { return tenureAcquire(ctx, env, t, n) },
			Etcd:   func(ctx context.Context, env *Env, e *Etcd) (Result, error) { return etcdAcquire(ctx, env, e, n) },
		})
	}
	ws = append(ws,
		Workload{
			Name: "renew one lease per call, 64 clients", Unit: "renew/s", HigherBetter: true,
			Tenure: func(ctx context.Context, env *Env, t *Tenure) (Result, error) { return tenureRenew(ctx, env, t, 64) },
			Etcd:   func(ctx context.Context, env *Env, e *Etcd) (Result, error) { return etcdRenew(ctx, env, e, 64) },
		},
		Workload{
			Name: fmt.Sprintf("bulk renewal, 64 holders × %d leases", o.BulkLeases), Unit: "leases/s", HigherBetter: true,
			Phase: 2, After: bulkAfter,
			Tenure: func(ctx context.Context, env *Env, t *Tenure) (Result, error) { return tenureBulk(ctx, env, t, 64) },
			Etcd:   func(ctx context.Context, env *Env, e *Etcd) (Result, error) { return etcdBulk(ctx, env, e, 64) },
		},
		Workload{
			Name: "linearizable read, 64 clients", Unit: "read/s", HigherBetter: true,
			Tenure: func(ctx context.Context, env *Env, t *Tenure) (Result, error) {
				return tenureRead(ctx, env, t, 64, false)
			},
			Etcd: func(ctx context.Context, env *Env, e *Etcd) (Result, error) { return etcdRead(ctx, env, e, 64, false) },
		},
		Workload{
			Name: "stale read, 64 clients", Unit: "read/s", HigherBetter: true,
			Tenure: func(ctx context.Context, env *Env, t *Tenure) (Result, error) {
				return tenureRead(ctx, env, t, 64, true)
			},
			Etcd: func(ctx context.Context, env *Env, e *Etcd) (Result, error) { return etcdRead(ctx, env, e, 64, true) },
		},
		Workload{
			Name: "contended hand-off, 16 clients", Unit: "handoff/s", HigherBetter: true,
			Tenure: func(ctx context.Context, env *Env, t *Tenure) (Result, error) { return tenureHandoff(ctx, env, t, 16) },
			Etcd:   func(ctx context.Context, env *Env, e *Etcd) (Result, error) { return etcdHandoff(ctx, env, e, 16) },
		},
		Workload{
			Name: "election hand-off, 16 campaigners", Unit: "elected/s", HigherBetter: true,
			Tenure: func(ctx context.Context, env *Env, t *Tenure) (Result, error) { return tenureElection(ctx, env, t, 16) },
			Etcd:   func(ctx context.Context, env *Env, e *Etcd) (Result, error) { return etcdElection(ctx, env, e, 16) },
		},
	)
	ws = append(ws, failoverWorkload(0))
	if o.FailoverLeases > 0 {
		ws = append(ws, failoverWorkload(o.FailoverLeases))
	}
	for _, n := range o.MemoryLeases {
		ws = append(ws, memoryWorkload(n))
	}
	return ws
}
