package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/tenure-io/tenure/client"
)

// benchClient is one simulated lease holder of a bench run. Its keys are
// its own (bench/<run>/<client>/<n>), so clients never conflict. Only its
// own goroutine uses it.
type benchClient struct {
	run    *benchRun
	c      *client.Client
	holder string
	keys   []string
	tokens []uint64 // token per key; 0: not held
	rng    *rand.Rand
}

// warmUp acquires every key of the client, unmeasured, so that renewals and
// reads have leases to work on.
func (c *benchClient) warmUp(ctx context.Context) {
	for i := range c.keys {
		l, _, err := c.c.Leases().Acquire(ctx, c.keys[i], c.acquireRequest())
		if err != nil {
			c.run.warmUpErrors.Add(1)
			continue
		}
		c.tokens[i] = l.Token
	}
}

// releaseAll releases the leases the client holds, unmeasured.
func (c *benchClient) releaseAll(ctx context.Context) {
	for i, tok := range c.tokens {
		if tok != 0 {
			_, _ = c.c.Leases().Release(ctx, c.keys[i], c.holder, tok)
			c.tokens[i] = 0
		}
	}
}

// step makes one measured operation, chosen by the weights. When the
// chosen operation is impossible (renew or release with nothing held,
// acquire with everything held), the client does the operation that makes
// it possible instead, and that is what is measured.
func (c *benchClient) step(ctx context.Context) {
	op := c.choose()
	if op == opRead {
		c.read(ctx, c.rng.IntN(len(c.keys)))
		return
	}
	i := c.pick(op != opAcquire) // acquire needs a free key, the others a held one
	switch {
	case i < 0 && op == opAcquire:
		c.release(ctx, c.pick(true))
	case i < 0:
		c.acquire(ctx, c.pick(false))
	case op == opAcquire:
		c.acquire(ctx, i)
	case op == opRenew:
		c.renew(ctx, i)
	default:
		c.release(ctx, i)
	}
}

// choose draws an operation by weight.
func (c *benchClient) choose() int {
	w := &c.run.cfg.weights
	sum := 0
	for _, n := range w {
		sum += n
	}
	x := c.rng.IntN(sum)
	for op, n := range w {
		if x < n {
			return op
		}
		x -= n
	}
	return opRead
}

// pick returns a random key index that is held (or free), -1 if none.
func (c *benchClient) pick(held bool) int {
	n := len(c.keys)
	start := c.rng.IntN(n)
	for j := 0; j < n; j++ {
		if i := (start + j) % n; (c.tokens[i] != 0) == held {
			return i
		}
	}
	return -1
}

func (c *benchClient) acquireRequest() client.AcquireRequest {
	return client.AcquireRequest{Holder: c.holder, TTL: c.run.cfg.ttl}
}

func (c *benchClient) acquire(ctx context.Context, i int) {
	c.measure(ctx, opAcquire, func() error {
		l, _, err := c.c.Leases().Acquire(ctx, c.keys[i], c.acquireRequest())
		if err == nil {
			c.tokens[i] = l.Token
		}
		return err
	})
}

func (c *benchClient) renew(ctx context.Context, i int) {
	c.measure(ctx, opRenew, func() error {
		_, _, err := c.c.Leases().Renew(ctx, c.keys[i], c.holder, c.tokens[i])
		if errors.Is(err, client.ErrLeaseLost) {
			c.tokens[i] = 0
		}
		return err
	})
}

func (c *benchClient) release(ctx context.Context, i int) {
	c.measure(ctx, opRelease, func() error {
		_, err := c.c.Leases().Release(ctx, c.keys[i], c.holder, c.tokens[i])
		// Held or not, the key is free for this client's purposes: a
		// later acquire by the same holder is idempotent.
		c.tokens[i] = 0
		return err
	})
}

func (c *benchClient) read(ctx context.Context, i int) {
	c.measure(ctx, opRead, func() error {
		_, _, err := c.c.Leases().Get(ctx, c.keys[i], &client.QueryOptions{Stale: c.run.cfg.stale})
		return err
	})
}

// measure runs f and records its latency, or its error. Failures caused by
// the user's interrupt are not the cluster's and are not recorded.
func (c *benchClient) measure(ctx context.Context, op int, f func() error) {
	start := time.Now()
	err := f()
	d := time.Since(start)
	c.run.done.Add(1)
	switch {
	case err == nil:
		c.run.stats[op].latency.record(d)
	case ctx.Err() == nil:
		c.run.stats[op].recordError(err)
	}
}
