package retention

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/cluster/internal/clock"
	"github.com/tenure-io/tenure/fsm"
)

// maxForgetBatch bounds the Forget commands of one sweep.
const maxForgetBatch = 256

// Config is what a Sweeper works with.
type Config struct {
	// Submit proposes a command through the leader's proposer, which
	// batches it, and returns its result.
	Submit  func(context.Context, fsm.Command) (fsm.Result, error)
	Machine *fsm.Machine
	// Clock is read on the leader's monotonic clock.
	Clock clock.Clock
	// Keep is how long a key stays free before it is forgotten; Every,
	// how often the sweeper looks (SweepInterval).
	Keep, Every time.Duration
	Log         hclog.Logger
}

// Sweeper is the leader's sweeper of free key records: it remembers, on
// the leader's monotonic clock, since when it has seen each key free, and
// proposes fsm.Forget for the keys free for longer than keep. One lives
// per leadership term, next to the proposer; it forgets everything it
// knew when leadership ends, and a new leader counts again from its own
// promotion, so a record is never forgotten before keep has passed on
// one leader's clock.
type Sweeper struct {
	cfg Config
	// seen is owned by Run: each free key's token and since when this
	// leader has seen it free under that token.
	seen map[string]freeSince
}

// New returns the Sweeper of one leadership term.
func New(cfg Config) *Sweeper { return &Sweeper{cfg: cfg} }

type freeSince struct {
	token uint64
	since time.Time
}

// SweepInterval is how often a Sweeper of keep sweeps, unless set.
func SweepInterval(keep, set time.Duration) time.Duration {
	if set > 0 {
		return set
	}
	return min(max(keep/10, 10*time.Millisecond), time.Minute)
}

// Run sweeps every r.cfg.Every until ctx ends (leadership lost).
func (r *Sweeper) Run(ctx context.Context) {
	r.seen = make(map[string]freeSince)
	r.observe(r.cfg.Clock.Now()) // keys free at promotion count from now
	t := r.cfg.Clock.NewTimer(r.cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		r.forget(ctx, r.observe(r.cfg.Clock.Now()))
		t.Reset(r.cfg.Every)
	}
}

// observe notes the keys that are free at now and returns up to
// maxForgetBatch of those free for at least r.cfg.Keep (keys of groups
// excepted). A key freed again under a newer token counts from now.
func (r *Sweeper) observe(now time.Time) []fsm.Forget {
	free, _ := r.cfg.Machine.List(fsm.Filter{State: "free"})
	next := make(map[string]freeSince, len(free))
	var due []fsm.Forget
	for _, l := range free {
		s, ok := r.seen[l.Key]
		if !ok || s.token != l.Token {
			s = freeSince{token: l.Token, since: now}
		}
		next[l.Key] = s
		if len(due) < maxForgetBatch && now.Sub(s.since) >= r.cfg.Keep && !r.cfg.Machine.InGroup(l.Key) {
			due = append(due, fsm.Forget{Key: l.Key, Token: l.Token})
		}
	}
	r.seen = next
	return due
}

// forget proposes cmds, which the proposer batches, and waits for them.
func (r *Sweeper) forget(ctx context.Context, cmds []fsm.Forget) {
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
			res, err := r.cfg.Submit(ctx, c)
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
		r.cfg.Log.Warn("forgetting free keys failed", "keys", len(cmds), "error", lastErr)
	}
	if forgotten > 0 {
		r.cfg.Log.Debug("free keys forgotten", "keys", forgotten, "retention", r.cfg.Keep)
	}
}
