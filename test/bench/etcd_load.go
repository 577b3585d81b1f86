package bench

import (
	"context"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// The etcd side of each workload, the same operations in etcd's terms.
// Every client is a clientv3.Client of its own (its own connection).

const etcdTTL = int64(benchTTL / time.Second)

// putIfAbsent is the acquire of a key: put it with the lease if its create
// revision is 0 (it does not exist).
func putIfAbsent(ctx context.Context, c *clientv3.Client, key string, lease clientv3.LeaseID) error {
	r, err := c.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, "holder", clientv3.WithLease(lease))).
		Commit()
	if err != nil {
		return err
	}
	if !r.Succeeded {
		return fmt.Errorf("etcd: %s is held", key)
	}
	return nil
}

// etcdClient returns a client of every member that is closed when ctx
// ends.
func etcdClient(ctx context.Context, e *Etcd) (*clientv3.Client, error) {
	c, err := e.Client()
	if err != nil {
		return nil, err
	}
	go func() { <-ctx.Done(); c.Close() }()
	return c, nil
}

// etcdLoad runs a load of n clients that mk turns into client i's step.
// The clients are e.LoadClient()s, one per client or, with e.Conns, Conns
// of them shared round robin; all are closed when the run ends.
func etcdLoad(ctx context.Context, env *Env, e *Etcd, n int,
	mk func(ctx context.Context, c *clientv3.Client, i int) (step, error)) (Result, error) {
	conns := n
	if e.Conns > 0 {
		conns = min(n, e.Conns)
	}
	pool := make([]*clientv3.Client, conns)
	defer func() {
		for _, c := range pool {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range pool {
		c, err := e.LoadClient()
		if err != nil {
			return Result{}, err
		}
		pool[i] = c
	}
	return loadRun(ctx, n, env.Duration, env.Progress, env.label, func(ctx context.Context, i int) (step, error) {
		return mk(ctx, pool[i%conns], i)
	})
}

// etcdSessionLoad is etcdLoad with a concurrency session of etcdTTL on
// each client, that mk turns into client i's step.
func etcdSessionLoad(ctx context.Context, env *Env, e *Etcd, n int,
	mk func(s *concurrency.Session, i int) step) (Result, error) {
	return etcdLoad(ctx, env, e, n, func(ctx context.Context, c *clientv3.Client, i int) (step, error) {
		s, err := concurrency.NewSession(c, concurrency.WithTTL(int(etcdTTL)))
		if err != nil {
			return nil, err
		}
		return mk(s, i), nil
	})
}

func etcdAcquire(ctx context.Context, env *Env, e *Etcd, clients int) (Result, error) {
	return etcdLoad(ctx, env, e, clients, func(ctx context.Context, c *clientv3.Client, i int) (step, error) {
		g, err := c.Grant(ctx, int64(longTTL/time.Second))
		if err != nil {
			return nil, err
		}
		key := env.key("acq", i)
		return func(ctx context.Context) (int, time.Duration, error) {
			t0 := time.Now()
			if err := putIfAbsent(ctx, c, key, g.ID); err != nil {
				return 0, 0, err
			}
			lat := time.Since(t0)
			if _, err := c.Delete(ctx, key); err != nil {
				return 0, 0, err
			}
			return 1, lat, nil
		}, nil
	})
}

func etcdRenew(ctx context.Context, env *Env, e *Etcd, clients int) (Result, error) {
	return etcdLoad(ctx, env, e, clients, func(ctx context.Context, c *clientv3.Client, i int) (step, error) {
		g, err := c.Grant(ctx, etcdTTL)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) (int, time.Duration, error) {
			_, err := c.KeepAliveOnce(ctx, g.ID)
			return 1, 0, err
		}, nil
	})
}

// etcdBulk: each holder renews its leases over one LeaseKeepAlive stream of
// its own, one lease per message (etcd has no other way), pipelined: all
// its requests are sent before the answers are read. The rate is of leases
// renewed.
func etcdBulk(ctx context.Context, env *Env, e *Etcd, holders int) (Result, error) {
	cache := env.cached(e.Name()+"-bulk", func() any { return make([][]clientv3.LeaseID, holders) }).([][]clientv3.LeaseID)
	return etcdLoad(ctx, env, e, holders, func(ctx context.Context, c *clientv3.Client, i int) (step, error) {
		if cache[i] == nil {
			var ids []clientv3.LeaseID
			for range env.BulkLeases {
				g, err := c.Grant(ctx, int64(longTTL/time.Second))
				if err != nil {
					return nil, err
				}
				ids = append(ids, g.ID)
			}
			cache[i] = ids
		}
		ids := cache[i]
		stream, err := pb.NewLeaseClient(c.ActiveConnection()).LeaseKeepAlive(env.runCtx)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) (int, time.Duration, error) {
			sent := make(chan error, 1)
			go func() {
				for _, id := range ids {
					if err := stream.Send(&pb.LeaseKeepAliveRequest{ID: int64(id)}); err != nil {
						sent <- err
						return
					}
				}
				sent <- nil
			}()
			ok := 0
			for range ids {
				r, err := stream.Recv()
				if err != nil {
					return ok, 0, err
				}
				if r.TTL > 0 {
					ok++
				}
			}
			if err := <-sent; err != nil {
				return ok, 0, err
			}
			if ok < len(ids) {
				return ok, 0, fmt.Errorf("bulk renewal: %d of %d leases lost", len(ids)-ok, len(ids))
			}
			return ok, 0, nil
		}, nil
	})
}

func etcdRead(ctx context.Context, env *Env, e *Etcd, clients int, stale bool) (Result, error) {
	return etcdLoad(ctx, env, e, clients, func(ctx context.Context, c *clientv3.Client, i int) (step, error) {
		g, err := c.Grant(ctx, etcdTTL)
		if err != nil {
			return nil, err
		}
		key := env.key("read", i)
		if err := putIfAbsent(ctx, c, key, g.ID); err != nil {
			return nil, err
		}
		var opts []clientv3.OpOption
		if stale {
			opts = append(opts, clientv3.WithSerializable())
		}
		return func(ctx context.Context) (int, time.Duration, error) {
			_, err := c.Get(ctx, key, opts...)
			return 1, 0, err
		}, nil
	})
}

// etcdHandoff: concurrency.Mutex lock and unlock among the clients, each
// with a session of its own.
func etcdHandoff(ctx context.Context, env *Env, e *Etcd, clients int) (Result, error) {
	prefix := env.key("handoff", 0)
	return etcdSessionLoad(ctx, env, e, clients, func(s *concurrency.Session, i int) step {
		m := concurrency.NewMutex(s, prefix)
		return func(ctx context.Context) (int, time.Duration, error) {
			if err := m.Lock(ctx); err != nil {
				return 0, 0, err
			}
			return 1, 0, m.Unlock(ctx)
		}
	})
}

// etcdElection: concurrency.Election among the clients; each resigns as
// soon as elected.
func etcdElection(ctx context.Context, env *Env, e *Etcd, clients int) (Result, error) {
	prefix := env.key("election", 0)
	return etcdSessionLoad(ctx, env, e, clients, func(s *concurrency.Session, i int) step {
		el := concurrency.NewElection(s, prefix)
		val := fmt.Sprintf("c%d", i)
		return func(ctx context.Context) (int, time.Duration, error) {
			t0 := time.Now()
			if err := el.Campaign(ctx, val); err != nil {
				return 0, 0, err
			}
			lat := time.Since(t0)
			return 1, lat, el.Resign(ctx)
		}
	})
}

// etcdPopulate makes the cluster hold at least n live leases, each with
// one key (pop/<n>), with 64 clients.
func etcdPopulate(ctx context.Context, env *Env, e *Etcd, n int) error {
	if *env.population(e.Name()) >= n {
		return nil
	}
	c, err := etcdClient(env.armCtx, e)
	if err != nil {
		return err
	}
	return env.ensurePopulation(ctx, e.Name(), n, e.FollowerPID, func(ctx context.Context, k int) error {
		g, err := c.Grant(ctx, int64(longTTL/time.Second))
		if err != nil {
			return err
		}
		return putIfAbsent(ctx, c, fmt.Sprintf("pop/%d", k), g.ID)
	})
}

// etcdBulkAfter revokes the bulk holders' leases.
func etcdBulkAfter(ctx context.Context, env *Env, e *Etcd) error {
	v, ok := env.st.cache[e.Name()+"-bulk"]
	if !ok {
		return nil
	}
	var ids []clientv3.LeaseID
	for _, h := range v.([][]clientv3.LeaseID) {
		ids = append(ids, h...)
	}
	c, err := etcdClient(env.armCtx, e)
	if err != nil {
		return err
	}
	return fill(ctx, env, "revoking the bulk leases", 0, len(ids), func(ctx context.Context, k int) error {
		_, err := c.Revoke(ctx, ids[k])
		return err
	})
}
