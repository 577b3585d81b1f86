package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/tenure-io/tenure/client"
)

// The tenure side of each workload. Every client is a client.Client of
// its own (its own connections), with its own holder; no call is retried,
// so that every failure counts.

const benchTTL = 10 * time.Second

// longTTL is the TTL of leases that must live through the whole run (the
// bulk holders' leases, the populations): tenure's default maximum.
const longTTL = time.Hour

// tenureLoad runs a load of n clients, each a client.Client of its own
// (not retrying), or one of t.Conns shared round robin, that mk turns
// into client i's step.
func tenureLoad(ctx context.Context, env *Env, t *Tenure, n int,
	mk func(ctx context.Context, c *client.Client, i int) (step, error)) (Result, error) {
	shared := make([]*client.Client, t.Conns)
	for i := range shared {
		c, err := t.Client(false)
		if err != nil {
			return Result{}, err
		}
		shared[i] = c
	}
	return loadRun(ctx, n, env.Duration, env.Progress, env.label, func(ctx context.Context, i int) (step, error) {
		if len(shared) > 0 {
			return mk(ctx, shared[i%len(shared)], i)
		}
		c, err := t.Client(false)
		if err != nil {
			return nil, err
		}
		return mk(ctx, c, i)
	})
}

func tenureAcquire(ctx context.Context, env *Env, t *Tenure, clients int) (Result, error) {
	return tenureLoad(ctx, env, t, clients, func(ctx context.Context, c *client.Client, i int) (step, error) {
		key, holder := env.key("acq", i), env.key("h", i)
		leases := c.Leases()
		return func(ctx context.Context) (int, time.Duration, error) {
			t0 := time.Now()
			l, _, err := leases.Acquire(ctx, key, client.AcquireRequest{Holder: holder, TTL: benchTTL})
			if err != nil {
				return 0, 0, err
			}
			lat := time.Since(t0)
			if _, err := leases.Release(ctx, key, holder, l.Token); err != nil {
				return 0, 0, err
			}
			return 1, lat, nil
		}, nil
	})
}

func tenureRenew(ctx context.Context, env *Env, t *Tenure, clients int) (Result, error) {
	return tenureLoad(ctx, env, t, clients, func(ctx context.Context, c *client.Client, i int) (step, error) {
		key, holder := env.key("renew", i), env.key("h", i)
		l, _, err := c.Leases().Acquire(ctx, key, client.AcquireRequest{Holder: holder, TTL: benchTTL})
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) (int, time.Duration, error) {
			_, _, err := c.Leases().Renew(ctx, key, holder, l.Token)
			return 1, 0, err
		}, nil
	})
}

// tenureBulk: each holder renews all its leases in one RenewManyBrief call
// per step, as the client's keep-alive does (the answer says which leases
// were renewed, as etcd's KeepAlive answer does, without the full lease);
// the rate is of leases renewed.
func tenureBulk(ctx context.Context, env *Env, t *Tenure, holders int) (Result, error) {
	type holderLeases struct {
		holder string
		refs   []client.LeaseRef
		// secret is the leases' secret, rc's: the holder renews through
		// another client, under that secret (once per call, not per
		// lease: 1,000 leases each naming it would pass the 64 KiB a
		// request body may have).
		secret string
	}
	cache := env.cached("tenure-bulk", func() any { return make([]*holderLeases, holders) }).([]*holderLeases)
	return tenureLoad(ctx, env, t, holders, func(ctx context.Context, c *client.Client, i int) (step, error) {
		if cache[i] == nil {
			rc, err := t.Client(true)
			if err != nil {
				return nil, err
			}
			h := &holderLeases{holder: fmt.Sprintf("bulk-holder-%d", i)}
			for n := range env.BulkLeases {
				key := fmt.Sprintf("bulk/%d/%d", i, n)
				l, _, err := rc.Leases().Acquire(ctx, key, client.AcquireRequest{Holder: h.holder, TTL: longTTL})
				if err != nil {
					return nil, err
				}
				h.refs = append(h.refs, client.LeaseRef{Key: key, Token: l.Token})
				h.secret = l.Secret
			}
			cache[i] = h
		}
		h := cache[i]
		return func(ctx context.Context) (int, time.Duration, error) {
			ok := 0
			for start := 0; start < len(h.refs); start += client.MaxRenewBatch {
				end := min(start+client.MaxRenewBatch, len(h.refs))
				res, _, err := c.Leases().WithSecret(h.secret).RenewManyBrief(ctx, h.holder, h.refs[start:end])
				if err != nil {
					return 0, 0, err
				}
				for _, r := range res {
					if r.Err == nil {
						ok++
					}
				}
			}
			if ok < len(h.refs) {
				return ok, 0, fmt.Errorf("bulk renewal: %d of %d leases lost", len(h.refs)-ok, len(h.refs))
			}
			return ok, 0, nil
		}, nil
	})
}

func tenureRead(ctx context.Context, env *Env, t *Tenure, clients int, stale bool) (Result, error) {
	return tenureLoad(ctx, env, t, clients, func(ctx context.Context, c *client.Client, i int) (step, error) {
		key, holder := env.key("read", i), env.key("h", i)
		if _, _, err := c.Leases().Acquire(ctx, key, client.AcquireRequest{Holder: holder, TTL: benchTTL}); err != nil {
			return nil, err
		}
		q := &client.QueryOptions{Stale: stale}
		return func(ctx context.Context) (int, time.Duration, error) {
			_, _, err := c.Leases().Get(ctx, key, q)
			return 1, 0, err
		}, nil
	})
}

// tenureHandoff: the clients contend for one key with blocking acquires
// and release it at once; the rate is of acquisitions (hand-offs).
func tenureHandoff(ctx context.Context, env *Env, t *Tenure, clients int) (Result, error) {
	key := env.key("handoff", 0)
	return tenureLoad(ctx, env, t, clients, func(ctx context.Context, c *client.Client, i int) (step, error) {
		holder := env.key("h", i)
		return func(ctx context.Context) (int, time.Duration, error) {
			l, _, err := c.Leases().Acquire(ctx, key, client.AcquireRequest{Holder: holder, TTL: benchTTL, Wait: 30 * time.Second})
			if err != nil {
				return 0, 0, err
			}
			_, err = c.Leases().Release(ctx, key, holder, l.Token)
			return 1, 0, err
		}, nil
	})
}

// tenureElection: the clients campaign in one Election and resign as soon
// as elected; the rate is of elections, the latency that of Campaign.
func tenureElection(ctx context.Context, env *Env, t *Tenure, clients int) (Result, error) {
	name := env.key("election", 0)
	return tenureLoad(ctx, env, t, clients, func(ctx context.Context, c *client.Client, i int) (step, error) {
		e := c.Election(name, client.WithTTL(benchTTL))
		return func(ctx context.Context) (int, time.Duration, error) {
			t0 := time.Now()
			l, err := e.Campaign(ctx)
			if err != nil {
				return 0, 0, err
			}
			lat := time.Since(t0)
			return 1, lat, l.Resign(ctx)
		}, nil
	})
}

// tenureAcquireOnce makes one acquisition of a new key through c, for the
// failover probe.
func tenureAcquireOnce(ctx context.Context, c *client.Client, key string) error {
	_, _, err := c.Leases().Acquire(ctx, key, client.AcquireRequest{Holder: "probe", TTL: benchTTL})
	return err
}

// tenurePopulate makes the cluster hold at least n live leases under
// pop/ (TTL an hour), with 64 clients.
func tenurePopulate(ctx context.Context, env *Env, t *Tenure, n int) error {
	c, err := t.Client(true)
	if err != nil {
		return err
	}
	return env.ensurePopulation(ctx, "tenure", n, t.FollowerPID, func(ctx context.Context, k int) error {
		_, _, err := c.Leases().Acquire(ctx, fmt.Sprintf("pop/%d", k), client.AcquireRequest{Holder: "pop", TTL: longTTL})
		return err
	})
}

// bulkAfter revokes the bulk holders' leases in both systems, so that the
// workloads after it (failover with a population) count only their own.
func bulkAfter(ctx context.Context, env *Env, t *Tenure, e *Etcd) error {
	if v, ok := env.st.cache["tenure-bulk"]; ok && v != nil {
		c, err := t.Client(true)
		if err != nil {
			return err
		}
		for i := range 64 {
			// Forced: without force a revoked lease keeps its key until
			// its deadline, an hour away, and the next arm's holders
			// could not take the keys again.
			if _, _, err := c.Leases().RevokeHolder(ctx, fmt.Sprintf("bulk-holder-%d", i), client.WithForce()); err != nil {
				return fmt.Errorf("tenure: revoke bulk-holder-%d: %w", i, err)
			}
		}
		delete(env.st.cache, "tenure-bulk") // the next arm's bulk renewal acquires its own
	}
	if e != nil {
		return etcdBulkAfter(ctx, env, e)
	}
	return nil
}
