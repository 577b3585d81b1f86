package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/cluster/internal/nodeconfig"
	"github.com/tenure-io/tenure/fsm"
)

// maxForgetBatch bounds the Forget commands of one sweep.
const maxForgetBatch = 256

// sweeper is the leader's forgetting of free key records
// (-free-key-retention): it remembers, on the leader's monotonic clock,
// since when it has seen each key free, and proposes fsm.Forget through
// the leader's proposer for the keys free for longer than keep, in
// bounded batches. One lives per leadership term, next to the proposer;
// it forgets everything it knew when leadership ends, and a new leader
// counts again from its own promotion, so a record is never forgotten
// before keep has passed on one leader's clock. It never forgets a key of
// a group.
type sweeper struct {
	p       *proposer
	machine *fsm.Machine
	clock   Clock
	keep    time.Duration
	log     hclog.Logger
	// seen is owned by sweepFreeKeys: each free key's token and since when
	// this leader has seen it free under that token.
	seen map[string]freeSince
}

type freeSince struct {
	token uint64
	since time.Time
}

// sweepFreeKeys forgets, through p, the keys free for longer than keep,
// until ctx ends (leadership lost).
func (n *Node) sweepFreeKeys(ctx context.Context, p *proposer, keep time.Duration) {
	r := &sweeper{p: p, machine: n.machine, clock: n.cfg.Clock, keep: keep, log: n.cfg.Logger.Named("retention"), seen: make(map[string]freeSince)}
	every := sweepInterval(keep, nodeconfig.TestHooks(&n.cfg).FreeKeySweep)
	r.observe(r.clock.Now()) // keys free at promotion count from now
	t := r.clock.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		r.forget(ctx, r.observe(r.clock.Now()))
		t.Reset(every)
	}
}

// sweepInterval is how often a sweeper of keep sweeps, unless set.
func sweepInterval(keep, set time.Duration) time.Duration {
	if set > 0 {
		return set
	}
	return min(max(keep/10, 10*time.Millisecond), time.Minute)
}

// observe notes the keys that are free at now and returns up to
// maxForgetBatch of those free for at least r.keep (keys of groups
// excepted). A key freed again under a newer token counts from now.
func (r *sweeper) observe(now time.Time) []fsm.Forget {
	free, _ := r.machine.List(fsm.Filter{State: "free"})
	next := make(map[string]freeSince, len(free))
	var due []fsm.Forget
	for _, l := range free {
		s, ok := r.seen[l.Key]
		if !ok || s.token != l.Token {
			s = freeSince{token: l.Token, since: now}
		}
		next[l.Key] = s
		if len(due) < maxForgetBatch && now.Sub(s.since) >= r.keep && !r.machine.InGroup(l.Key) {
			due = append(due, fsm.Forget{Key: l.Key, Token: l.Token})
		}
	}
	r.seen = next
	return due
}

// forget proposes cmds, which the proposer batches, and waits for them.
func (r *sweeper) forget(ctx context.Context, cmds []fsm.Forget) {
	if len(cmds) == 0 {
		return
	}
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		forgotten int
		lastErr   error
	)
	for _, c := range cmds {
		wg.Add(1)
		go func(c fsm.Forget) {
			defer wg.Done()
			res, err := r.p.submit(ctx, &op{cmd: c})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				lastErr = err
			case res.Code == fsm.Freed:
				forgotten++
			}
		}(c)
	}
	wg.Wait()
	if lastErr != nil && ctx.Err() == nil {
		r.log.Warn("forgetting free keys failed", "keys", len(cmds), "error", lastErr)
	}
	if forgotten > 0 {
		r.log.Debug("free keys forgotten", "keys", forgotten, "retention", r.keep)
	}
}
