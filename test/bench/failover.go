package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// loadClients is the background load of a failover run: acquire+release.
const loadClients = 16

// failoverWorkload: under a load of 16 acquire+release clients (and with
// population live leases), kill -9 the leader; the figure is the time from
// the kill to the first acquisition of a new key that commits. The killed
// server is restarted on its data dir before the run ends.
func failoverWorkload(population int) Workload {
	name := "failover: leader kill -9 to first acquisition"
	if population > 0 {
		name += fmt.Sprintf(", %d live leases", population)
	}
	return Workload{
		Name: name, Unit: "ms", Population: population, Phase: map[bool]int{true: 1, false: 3}[population == 0], Failover: true,
		Tenure: func(ctx context.Context, env *Env, t *Tenure) (Result, error) {
			if err := tenurePopulate(ctx, env, t, population); err != nil {
				return Result{}, err
			}
			probe := func(ctx context.Context, key string) error {
				c, err := t.Client(false)
				if err != nil {
					return err
				}
				return tenureAcquireOnce(ctx, c, key)
			}
			return failover(ctx, env, t.KillLeader, probe, func(ctx context.Context, env *Env) (Result, error) {
				return tenureAcquire(ctx, env, t, loadClients)
			})
		},
		Etcd: func(ctx context.Context, env *Env, e *Etcd) (Result, error) {
			if err := etcdPopulate(ctx, env, e, population); err != nil {
				return Result{}, err
			}
			// The probe's lease is granted before the kill: the probe
			// measures the acquisition alone, as tenure's does.
			c, err := e.Client()
			if err != nil {
				return Result{}, err
			}
			g, err := c.Grant(ctx, int64(longTTL/time.Second))
			c.Close()
			if err != nil {
				return Result{}, err
			}
			probe := func(ctx context.Context, key string) error {
				c, err := e.Client()
				if err != nil {
					return err
				}
				defer c.Close()
				return putIfAbsent(ctx, c, key, g.ID)
			}
			return failover(ctx, env, e.KillLeader, probe, func(ctx context.Context, env *Env) (Result, error) {
				return etcdAcquire(ctx, env, e, loadClients)
			})
		},
	}
}

// failover runs load in the background, kills the leader after a second,
// then probes with acquisitions of new keys (a new attempt every 10ms,
// each bounded by a second, from a new client of the surviving servers)
// until one succeeds; the figure is when the first success returned.
func failover(ctx context.Context, env *Env, kill func() (func() error, error),
	probe func(ctx context.Context, key string) error, load func(ctx context.Context, env *Env) (Result, error)) (Result, error) {
	lctx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = load(lctx, env.quiet(time.Hour))
	}()
	defer func() { stopLoad(); wg.Wait() }()
	time.Sleep(time.Second)

	restart, err := kill()
	if err != nil {
		return Result{}, err
	}
	killed := time.Now()
	// A new probe every 10ms, each bounded by env.probeTimeout(), so that an
	// attempt stuck in the election (its proposal dropped) does not hide
	// the moment the cluster commits again.
	var attempts atomic.Int64
	found := make(chan time.Duration, 1)
	pctx, cancelProbes := context.WithCancel(ctx)
	var probes sync.WaitGroup
	defer func() { cancelProbes(); probes.Wait() }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var took time.Duration
wait:
	for n := 0; ; n++ {
		select {
		case took = <-found:
			break wait
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-tick.C:
		}
		if time.Since(killed) > time.Minute {
			return Result{}, fmt.Errorf("no acquisition within a minute of the kill (%d attempts)", attempts.Load())
		}
		attempts.Add(1)
		probes.Add(1)
		go func() {
			defer probes.Done()
			actx, cancel := context.WithTimeout(pctx, env.probeTimeout())
			defer cancel()
			if probe(actx, env.key("failover-probe", n)) == nil {
				select {
				case found <- time.Since(killed):
				default:
				}
			}
		}()
	}
	cancelProbes()
	probes.Wait()
	if env.Progress != nil {
		fmt.Fprintf(env.Progress, "  %s: first acquisition %v after the kill (%d attempts); restarting the killed server\n",
			env.label, took.Round(time.Millisecond), attempts.Load())
	}
	stopLoad()
	wg.Wait()
	if err := restart(); err != nil {
		return Result{}, fmt.Errorf("restart after the kill: %w", err)
	}
	return Result{Value: float64(took) / float64(time.Millisecond)}, nil
}

// memoryWorkload: the growth of a follower's resident memory per lease
// while the population grows to n (from the previous population). It is
// measured once, when the population is made; later rounds repeat it.
func memoryWorkload(n int) Workload {
	return Workload{
		Name: fmt.Sprintf("follower memory per lease, %d leases", n), Unit: "B/lease", Population: n, Phase: 3,
		Tenure: func(ctx context.Context, env *Env, t *Tenure) (Result, error) {
			if err := tenurePopulate(ctx, env, t, n); err != nil {
				return Result{}, err
			}
			return memoryPerLease(env, "tenure", n), nil
		},
		Etcd: func(ctx context.Context, env *Env, e *Etcd) (Result, error) {
			if err := etcdPopulate(ctx, env, e, n); err != nil {
				return Result{}, err
			}
			return memoryPerLease(env, e.Name(), n), nil
		},
	}
}

func memoryPerLease(env *Env, system string, n int) Result {
	v := env.cached(fmt.Sprintf("%s-memory-%d", system, n), func() any { return new(float64) }).(*float64)
	return Result{Value: *v}
}

// rss is the resident set size of pid in bytes (VmRSS).
func rss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
