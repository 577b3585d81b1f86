package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/cluster/internal/lessor"
	metricset "github.com/tenure-io/tenure/cluster/internal/metrics"
	"github.com/tenure-io/tenure/cluster/internal/placement"
	"github.com/tenure-io/tenure/fsm"
)

// proposer is the leader's single writer. It gathers the acquires, releases
// and revokes that arrive while the previous log entry commits, adds the
// expiries the lessor hands out, and proposes them all as one Batch (group
// commit: one fsync serves them all). It also keeps the FIFO queue of
// blocking acquirers of each key: when a batch frees a key that has
// waiters, the same batch grants it to the first of them, so a hand-off
// costs one commit.
//
// One proposer lives per leadership term: the leader loop starts it after
// promotion and cancels its context on demotion. run returns then, after
// answering every queued request with ErrLeadershipLost.
type proposer struct {
	apply    func(fsm.Command) (any, error)
	machine  *fsm.Machine
	lessor   *lessor.Lessor
	log      hclog.Logger
	metrics  *metricset.Set
	term     uint64
	maxBatch int
	// maxPending bounds the writes queued for the next batches.
	maxPending int
	// maxWaiters bounds the blocking acquirers queued over all keys.
	maxWaiters int
	// stuck is this term's tracking of stuck workers; the balancer updates
	// it, the placement health report reads it.
	stuck *placement.Tracker
	// loads are the loads this term's renewals reported (ReportLoads);
	// the balancer and the group view read them.
	loads *placement.Loads

	in       chan *op
	timeouts chan *op
	cancels  chan *op
	stopped  chan struct{}
	// halted is closed by halt: run returns, as if leadership were lost.
	halted   chan struct{}
	haltOnce sync.Once

	// waiting counts the queued blocking acquirers, for metrics.
	waiting atomic.Int64

	// Owned by the run goroutine.
	pending []*op
	waiters map[string][]*op
	// kicked holds keys that gained a waiter in the last round: if such a
	// key is free by the next build, its first waiter gets it.
	kicked map[string]struct{}
}

// halt makes run return, failing what is queued, while the node still
// leads: its leader establishes again (Node.lead).
func (p *proposer) halt() { p.haltOnce.Do(func() { close(p.halted) }) }

// op is one write waiting for its outcome.
type op struct {
	cmd fsm.Command
	// by is the operator on whose behalf cmd is proposed (WithActor); ""
	// for none. build wraps cmd in an fsm.By then (op.command).
	by      string
	waitEnd time.Time // blocking acquire: when to give up; zero otherwise
	done    chan opResult
	queued  bool // in a wait queue
	// noEntry: queued by waitsWithoutEntry, its refusal never committed;
	// the end of its wait is answered through the log (dropWaiter).
	noEntry bool
	// cancelled: the caller went away before the op was queued; it must
	// not be queued then.
	cancelled bool
	timer     *time.Timer
}

type opResult struct {
	res fsm.Result
	err error
	// ended: the leases the command ended, with the time each has left.
	ended []EndedLease
}

// slot ties one command of a batch to whoever waits for its result.
type slot struct {
	op      *op
	handoff bool           // op is a waiter being granted a freed key
	exp     *lessor.Expiry // a lessor expiry
}

func newProposer(p *proposer) *proposer {
	p.in = make(chan *op, p.maxPending)
	p.timeouts = make(chan *op, 64)
	p.cancels = make(chan *op, 64)
	p.stopped = make(chan struct{})
	p.halted = make(chan struct{})
	p.waiters = make(map[string][]*op)
	p.kicked = make(map[string]struct{})
	if p.maxWaiters <= 0 {
		p.maxWaiters = DefaultConfig().MaxWaiters
	}
	return p
}

// submit queues o and waits for its outcome. ErrNotLeader means it was
// never queued; ErrLeadershipLost and context errors mean the outcome is
// unknown.
func (p *proposer) submit(ctx context.Context, o *op) (fsm.Result, error) {
	r := p.submitOp(ctx, o)
	return r.res, r.err
}

// submitOp is submit with the whole outcome, the ended leases included.
func (p *proposer) submitOp(ctx context.Context, o *op) opResult {
	select {
	case <-p.stopped:
		return opResult{err: ErrNotLeader}
	default:
	}
	o.done = make(chan opResult, 1)
	if o.by == "" {
		o.by, _ = ctx.Value(actorKey{}).(string) // WithActor's, or ""
	}
	select {
	case p.in <- o:
	default:
		return opResult{err: ErrOverloaded}
	}
	select {
	case r := <-o.done:
		return r
	case <-ctx.Done():
		if !o.waitEnd.IsZero() {
			select {
			case p.cancels <- o:
			case <-p.stopped:
			}
		}
		return opResult{err: ctx.Err()}
	case <-p.stopped:
		select {
		case r := <-o.done:
			return r
		default:
			return opResult{err: ErrLeadershipLost}
		}
	}
}

func (p *proposer) run(ctx context.Context, clock Clock) {
	defer p.failAll()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.halted:
			cancel()
		case <-ctx.Done():
		}
	}()
	timer := clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if d, ok := p.lessor.Next(); ok {
			timer.Reset(max(d, 0))
		} else {
			timer.Stop()
		}
		if len(p.pending) == 0 && len(p.kicked) == 0 {
			// Nothing left over from the last batch: wait for work.
			select {
			case <-ctx.Done():
				return
			case o := <-p.in:
				p.pending = append(p.pending, o)
			case <-timer.C():
			case <-p.lessor.Changed():
			case o := <-p.timeouts:
				p.dropWaiter(o, true)
			case o := <-p.cancels:
				p.dropWaiter(o, false)
			}
		} else if ctx.Err() != nil {
			return
		}
		p.drain()
		cmds, slots := p.build()
		if len(cmds) == 0 {
			continue
		}
		start := time.Now()
		out, err := p.apply(fsm.Batch{Commands: cmds})
		p.metrics.ObserveApply(time.Since(start), len(cmds))
		if err != nil {
			p.log.Warn("batch not applied", "commands", len(cmds), "error", err)
			for _, s := range slots {
				if s.op != nil && !s.handoff {
					s.op.done <- opResult{err: ErrLeadershipLost}
				}
			}
			return
		}
		p.finish(slots, out.([]fsm.Result))
	}
}

// drain takes whatever else is ready without blocking.
func (p *proposer) drain() {
	for {
		select {
		case o := <-p.in:
			p.pending = append(p.pending, o)
			if len(p.pending) >= p.maxBatch {
				return
			}
		case o := <-p.timeouts:
			p.dropWaiter(o, true)
		case o := <-p.cancels:
			p.dropWaiter(o, false)
		default:
			return
		}
	}
}

// build assembles the next batch: expiries first (a same-holder acquire in
// the same batch then gets a new token rather than a lease about to be
// freed), then the pending writes in arrival order, each release followed
// by the grant to the key's first waiter. A batch never holds more than
// maxBatch commands, hand-offs included; what does not fit waits for the
// next batch.
func (p *proposer) build() ([]fsm.Command, []slot) {
	var cmds []fsm.Command
	var slots []slot
	handed := make(map[string]bool)
	// controlled: keys whose controls a command already in this batch
	// changes. The controls read now may not be those the hand-off will
	// meet, so its first waiter is offered the key as it is, and the state
	// machine decides (finish answers a refusal and kicks the key).
	controlled := make(map[string]bool)
	kicked := p.kicked
	p.kicked = make(map[string]struct{})
	touched := make(map[string]bool)
	handoff := func(key string) {
		if handed[key] {
			return
		}
		var w *op
		if controlled[key] {
			if q := p.waiters[key]; len(q) > 0 {
				w = q[0]
			}
		} else {
			w = p.firstAcceptable(key)
		}
		if w == nil {
			return
		}
		if len(cmds) >= p.maxBatch {
			p.kicked[key] = struct{}{} // no room: try in the next batch
			return
		}
		handed[key] = true
		touched[key] = true
		a := w.cmd.(fsm.Acquire)
		a.Time = time.Now().UnixNano()
		cmds = append(cmds, a)
		slots = append(slots, slot{op: w, handoff: true})
	}
	for _, e := range p.lessor.Expired(max(p.maxBatch/2, 1)) {
		e := e
		cmds = append(cmds, fsm.Expire{Key: e.Key, Token: e.Token, Term: p.term})
		slots = append(slots, slot{exp: &e})
		handoff(e.Key)
	}
	for key := range kicked {
		if l := p.machine.Get(key); l == nil || !l.Held {
			handoff(key)
		}
	}
	// touched: the keys of the commands in the batch so far, "" for a
	// command whose keys are not known here; either stops a blocking
	// acquire from waiting without an entry (waitsWithoutEntry).
	for _, c := range cmds {
		touched[commandKey(c)] = true
	}
	// Each pending write may bring a hand-off: keep room for both.
	n := 0
	for n < len(p.pending) && len(cmds)+2 <= p.maxBatch {
		o := p.pending[n]
		n++
		if p.waitsWithoutEntry(o, touched) {
			continue
		}
		touched[commandKey(o.cmd)] = true
		cmds = append(cmds, o.command())
		slots = append(slots, slot{op: o})
		switch c := o.cmd.(type) {
		case fsm.Release:
			handoff(c.Key)
		case fsm.Revoke:
			handoff(c.Key)
		case fsm.End:
			if c.Force && c.Key != "" {
				handoff(c.Key)
			}
		case fsm.SetKeyControl:
			controlled[c.Key] = true
			if c.Force {
				handoff(c.Key)
			}
		case fsm.EditKeyControl:
			controlled[c.Key] = true
		}
	}
	p.pending = append(p.pending[:0], p.pending[n:]...)
	return cmds, slots
}

// finish hands each result to its waiter and updates the lessor.
func (p *proposer) finish(slots []slot, results []fsm.Result) {
	for i, s := range slots {
		r := results[i]
		switch {
		case s.exp != nil:
			p.lessor.Remove(s.exp.Key, s.exp.Token)
			if r.Code == fsm.Freed {
				p.metrics.Expiries.Inc() // logged from the events (eventlog.go)
			}
		case s.handoff:
			switch r.Code {
			case fsm.Granted:
				p.unqueue(s.op)
				p.granted(s.op, r)
			case fsm.Disabled, fsm.Prohibited:
				// It will never be granted: say why now, and offer the
				// key to the next waiter in the next batch.
				p.unqueue(s.op)
				s.op.done <- opResult{res: r}
				p.kicked[s.op.cmd.(fsm.Acquire).Key] = struct{}{}
			case fsm.Held:
				// The command it followed did not free the key; keep
				// waiting. Another command of the batch may have freed it
				// after the hand-off (two releases of one key, the first
				// refused): look again in the next batch.
				p.kicked[s.op.cmd.(fsm.Acquire).Key] = struct{}{}
			}
		default:
			p.settle(s.op, r, p.ended(r))
		}
	}
}

func (p *proposer) settle(o *op, r fsm.Result, ended []EndedLease) {
	switch c := o.cmd.(type) {
	case fsm.Acquire:
		switch r.Code {
		case fsm.Held:
			if !o.cancelled && !o.waitEnd.IsZero() && time.Now().Before(o.waitEnd) {
				if int(p.waiting.Load()) >= p.maxWaiters {
					// Nothing was done: the caller may retry later.
					o.done <- opResult{err: ErrOverloaded}
					return
				}
				p.queueForKey(o, c.Key)
				return
			}
			p.metrics.Conflicts.Inc()
		case fsm.Granted, fsm.Kept:
			p.granted(o, r)
			return
		}
	case fsm.Release, fsm.Revoke:
		if r.Code == fsm.Freed {
			if len(p.waiters[r.Lease.Key]) > 0 {
				// Its hand-off may have gone with an earlier command of
				// the batch that did not free the key.
				p.kicked[r.Lease.Key] = struct{}{}
			}
			p.lessor.Remove(r.Lease.Key, r.Lease.Token)
			p.metrics.Releases.Inc()
		}
	}
	o.done <- opResult{res: r, ended: ended}
}

func (p *proposer) granted(o *op, r fsm.Result) {
	p.lessor.Grant(r.Lease.Key, r.Lease.Token, r.Lease.TTL, r.Lease.ModifyIndex)
	if r.Code == fsm.Granted {
		p.metrics.Acquisitions.Inc()
	}
	o.done <- opResult{res: r}
}
