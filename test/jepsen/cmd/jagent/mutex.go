package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/test/jepsen/history"
)

// mutexRetryPause bounds the random pause before acquiring again after an
// acquisition failed.
const mutexRetryPause = 250 * time.Millisecond

// mutexWorker holds leases of the keys, one at a time, and increments the
// key's register on the store under each, fenced by the lease's token.
type mutexWorker struct {
	holderProc
	keys []string
	work time.Duration
	wait time.Duration
	// stall, with probability stallProb, pauses a write between its last
	// Belief and the request: the pause of a process at the worst moment.
	stall     time.Duration
	stallProb float64
	store     *storeClient
}

// runMutex is `jagent mutex`.
func runMutex(ctx context.Context, args []string, stderr io.Writer) int {
	var (
		hf              holderFlags
		storeURL, keys  string
		work, wait      time.Duration
		stall           time.Duration
		stallProb       float64
		revokeEvery     time.Duration
		storeURLs, list []string
	)
	fs := newFlagSet("mutex", "-servers URLS -store URL -id ID -history FILE [-keys K,...] [-ttl D] [-work D] [-wait D] [-seed N] [-duration D]", stderr)
	hf.register(fs)
	fs.StringVar(&storeURL, "store", "", "base URL of the jagent store, http://IP:PORT (required)")
	fs.StringVar(&keys, "keys", "k0,k1", "comma-separated lease keys; each is also the key of its register on the store")
	fs.DurationVar(&work, "work", 40*time.Millisecond, "pause between reading the register and writing it")
	fs.DurationVar(&wait, "wait", 5*time.Second, "how long one acquisition queues for a held key before trying again")
	fs.DurationVar(&stall, "stall", 0, "pause this long between the last lease check and the store write, with probability -stall-prob (0: never)")
	fs.Float64Var(&stallProb, "stall-prob", 0, "probability of a -stall before each store write, in [0, 1]")
	fs.DurationVar(&revokeEvery, "revoke-every", 0, "as an operator, revoke a random key (the safe way, not forced) about this often (0: never)")
	check := func() error {
		var err error
		if storeURL == "" {
			return errors.New("-store is required")
		}
		if storeURLs, err = parseServers(storeURL); err != nil || len(storeURLs) != 1 {
			return fmt.Errorf("-store: want one http://IP:PORT, got %q", storeURL)
		}
		if list = splitList(keys); len(list) == 0 {
			return errors.New("-keys: at least one key is required")
		}
		if work < 0 {
			return fmt.Errorf("-work must not be negative, got %v", work)
		}
		if stall < 0 {
			return fmt.Errorf("-stall must not be negative, got %v", stall)
		}
		if stallProb < 0 || stallProb > 1 {
			return fmt.Errorf("-stall-prob must be within [0, 1], got %v", stallProb)
		}
		if revokeEvery < 0 {
			return fmt.Errorf("-revoke-every must not be negative, got %v", revokeEvery)
		}
		return positive("wait", wait)
	}
	return runHolder(ctx, fs, args, stderr, &hf, check, func(ctx context.Context, log hclog.Logger, rec *recorder, c *client.Client) int {
		m := &mutexWorker{holderProc: newHolderProc(hf, log, rec, c), keys: list, work: work, wait: wait,
			stall: stall, stallProb: stallProb, store: newStoreClient(storeURLs[0], hf.timeout)}
		log.Info("starting", "id", hf.id, "keys", list, "ttl", hf.ttl, "work", work, "seed", hf.seed, "store", storeURLs[0], "servers", hf.urls, "revoke_every", revokeEvery)
		revoked := make(chan struct{})
		go func() {
			defer close(revoked)
			if revokeEvery > 0 {
				m.revokeLoop(ctx, revokeEvery, newRand(hf.seed, 1))
			}
		}()
		m.run(ctx)
		<-revoked
		return exitOK
	})
}

// run acquires and holds keys until ctx ends.
func (m *mutexWorker) run(ctx context.Context) {
	for ctx.Err() == nil {
		key := m.keys[m.rng.IntN(len(m.keys))]
		holder := m.holders.next()
		lease, err := m.c.Acquire(ctx, key, client.WithTTL(m.ttl), client.WithWait(m.wait),
			client.WithHolder(holder), client.WithHooks(leaseHooks(m.rec, m.id)))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !errors.Is(err, client.ErrHeld) {
				m.log.Warn("acquire failed", "key", key, "holder", holder, "error", err)
			}
			sleepCtx(ctx, between(m.rng, 0, mutexRetryPause))
			continue
		}
		m.log.Info("acquired", "key", key, "holder", holder, "token", lease.Token())
		m.hold(ctx, lease)
	}
}

// hold does fenced read-modify-writes under lease for a random 1 to 4
// TTLs, until the lease ends, the store says a newer holder exists, the
// store cannot be reached, or ctx ends; then it releases the lease (within
// releaseBudget), recording Released first unless the lease was lost.
func (m *mutexWorker) hold(ctx context.Context, lease *client.Lease) {
	key, holder, token := lease.Key(), lease.Holder(), lease.Token()
	end := time.Now().Add(between(m.rng, m.ttl, 4*m.ttl))
	writes := 0
	for ctx.Err() == nil && time.Now().Before(end) {
		if !believe(m.rec, m.id, lease) {
			break
		}
		v, err := m.store.read(ctx, key, holder, token)
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("store read failed; giving the lease up", "key", key, "token", token, "error", err)
			}
			break
		}
		if !sleepCtx(ctx, m.work) || !believe(m.rec, m.id, lease) || !m.maybeStall(ctx, key, token) {
			break
		}
		_, err = m.store.write(ctx, key, regWrite{Writer: holder, Token: token, Base: v.Value, Value: v.Value + 1})
		if errors.Is(err, errStaleToken) {
			m.log.Warn("the store has seen a newer holder; giving the lease up", "key", key, "token", token, "error", err)
			break
		}
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("store write failed; giving the lease up", "key", key, "token", token, "error", err)
			}
			break
		}
		writes++
	}
	if err := lease.Err(); err != nil {
		m.log.Warn("lease lost", "key", key, "token", token, "writes", writes, "error", err)
	}
	released(m.rec, m.id, lease)
	rctx, cancel := context.WithTimeout(context.Background(), releaseBudget)
	defer cancel()
	if err := lease.Release(rctx); err != nil {
		m.log.Warn("release failed; the lease will expire", "key", key, "token", token, "error", err)
		return
	}
	m.log.Info("released", "key", key, "token", token, "writes", writes)
}

// maybeStall pauses for m.stall with probability m.stallProb, and reports
// whether ctx is still alive. It draws from the generator only when a
// stall is configured, so that the random choices of a run without one
// are those of its seed.
func (m *mutexWorker) maybeStall(ctx context.Context, key string, token uint64) bool {
	if m.stall <= 0 || m.stallProb <= 0 || m.rng.Float64() >= m.stallProb {
		return ctx.Err() == nil
	}
	m.log.Warn("stalling between the lease check and the store write", "key", key, "token", token, "stall", m.stall)
	return sleepCtx(ctx, m.stall)
}

// revokeLoop revokes a random key, as an operator would and the safe way
// (not forced), about every every (uniformly within [every/2, 3·every/2]),
// until ctx ends. The holder's renewals are refused from then on and the
// key goes to the next waiter only once the holder's deadline passed, so
// the exclusion checker covers revoke. It has its own generator: the run
// loop's choices stay those of the seed.
func (m *mutexWorker) revokeLoop(ctx context.Context, every time.Duration, rng *rand.Rand) {
	for sleepCtx(ctx, between(rng, every/2, every*3/2)) {
		key := m.keys[rng.IntN(len(m.keys))]
		ended, _, err := m.c.Leases().RevokeKey(ctx, key)
		switch {
		case err != nil && ctx.Err() == nil:
			m.log.Warn("revoke failed", "key", key, "error", err)
		case err == nil:
			t := history.Now()
			for _, l := range ended {
				_ = m.rec.Write(history.Event{T: t, Kind: history.Revoked, Proc: m.id, Key: l.Key, Holder: l.Holder, Token: l.Token})
				m.log.Info("revoked", "key", l.Key, "holder", l.Holder, "token", l.Token, "frees_in", l.FreesIn)
			}
		}
	}
}
