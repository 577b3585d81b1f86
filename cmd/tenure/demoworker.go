package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/worker"
)

const demoWorkerUsage = `demo-worker -group NAME [-id ID] [-capacity N] [-ttl D] [-work D] [-gossip-addr A] [-gossip-advertise A]

Run a worker of group NAME that "works" on each key the balancer gives it.
Where the servers' gossip is encrypted (tenure server -gossip-key), give
the worker the key in the environment variable ` + worker.EnvGossipKey + `
(base64, as tenure keygen prints it; several separated by commas, the
primary first). Without it, or with a key the servers do not hold, the
worker cannot join their gossip, takes no keys, and logs why at ERROR.`

// demoWorker runs a worker.Worker whose handler "works" on each key it
// owns: a line per key every -work interval, with the fencing token, until
// the key moves or the lease is lost. It is the runnable example of a
// partitioned worker, and what `make demo` starts.
func (e *env) demoWorker(ctx context.Context, args []string) int {
	var (
		group, id, gossip string
		advertise         string
		capacity          int
		ttl, work         time.Duration
		quiet             bool
		logs              logOutput
	)
	fs, cf := e.clusterFlagSet("demo-worker", demoWorkerUsage)
	fs.StringVar(&group, "group", "", "group whose keys to own (required)")
	fs.StringVar(&id, "id", "", "worker id, also the lease holder (default: hostname-pid-random)")
	fs.IntVar(&capacity, "capacity", 0, "most keys this worker takes (0: no bound)")
	fs.DurationVar(&ttl, "ttl", 5*time.Second, "TTL of the worker's leases")
	fs.DurationVar(&work, "work", 2*time.Second, "interval between two units of work on a key")
	fs.StringVar(&gossip, "gossip-addr", "", "gossip address to bind (default: loopback while the servers are on loopback, else the local address that routes to the first server)")
	fs.StringVar(&advertise, "gossip-advertise", "", "gossip address to announce, host or host:port (default: chosen as -gossip-addr says)")
	fs.BoolVar(&quiet, "quiet", false, "log only keys gained and lost, not each unit of work")
	fs.Var(&logs.format, "log-format", "`format` of log lines: text (the default) or json (one JSON object per line)")
	if _, code, ok := e.parse(fs, args, 0, 0); !ok {
		return code
	}
	if group == "" {
		return e.usageError(fs, "-group is required")
	}
	cfg := cf.config()
	cfg.Holder = id
	c, err := client.New(cfg)
	if err != nil {
		return e.fail(err)
	}
	log := logs.logger("demo-worker", e.stderr)
	var mu sync.Mutex
	owned := map[string]uint64{}
	handler := func(ctx context.Context, key string, token uint64) {
		mu.Lock()
		owned[key] = token
		n := len(owned)
		mu.Unlock()
		fmt.Fprintf(e.stdout, "%s gained %s token=%d (owns %d)\n", id, key, token, n)
		tick := time.NewTicker(work)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				mu.Lock()
				delete(owned, key)
				n := len(owned)
				mu.Unlock()
				fmt.Fprintf(e.stdout, "%s handed back %s token=%d (owns %d): %v\n", id, key, token, n, context.Cause(ctx))
				return
			case <-tick.C:
				if !quiet {
					fmt.Fprintf(e.stdout, "%s working on %s token=%d\n", id, key, token)
				}
			}
		}
	}
	id = cmp.Or(id, c.Holder())
	opts := []worker.WorkerOption{worker.WithWorkerID(id), worker.WithWorkerTTL(ttl), worker.WithCapacity(capacity), worker.WithWorkerLogger(log)}
	if gossip != "" {
		opts = append(opts, worker.WithGossipAddr(gossip))
	}
	if advertise != "" {
		opts = append(opts, worker.WithGossipAdvertise(advertise))
	}
	w := worker.New(c, group, handler, opts...)
	fmt.Fprintf(e.stdout, "%s: worker of group %s (pid %d)\n", w.ID(), group, os.Getpid())
	if err := w.Run(ctx); err != nil && ctx.Err() == nil {
		return e.fail(err)
	}
	return exitOK
}
