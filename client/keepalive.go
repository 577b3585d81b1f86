package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// leaseID names a lease of a Client: one holder's lease on one key.
type leaseID struct{ holder, key string }

// keeper keeps the leases of one Client alive.
//
// One renewer goroutine (run) serves all of them. It starts with the first
// lease and ends when the Client holds none, after cancelling the renewals
// still in flight and waiting for their goroutines. Each tick it renews
// every lease that is due, together with every lease that is at least
// half-way through its interval, in one RenewMany call per holder (split at
// MaxRenewBatch). Two groups of leases whose ticks are apart merge at the
// first tick where one of them is half-way, so within one interval the
// Client makes one call per tick; renewing a lease early costs a few bytes
// in a call that is made anyway. Each call runs in its own goroutine: the renewer keeps watching
// the local deadlines while calls are in flight, so a hung call cannot
// delay a loss.
type keeper struct {
	c *Client

	mu        sync.Mutex
	leases    map[leaseID]*Lease   // held leases
	acquiring map[leaseID]struct{} // an Acquire is in progress
	releasing map[leaseID]int      // Release requests in flight
	totals    map[string]float64   // ReportHolderLoad, by holder with a held lease
	// noLoads: a server refused a renewal that carried loads (it predates
	// them); renewals carry none from then on.
	noLoads atomic.Bool
	running bool          // the renewer goroutine runs
	wake    chan struct{} // capacity 1: the set of leases changed

	// scale returns the factor of the next renewal interval, uniform in
	// [0.9, 1.1]. One factor serves all the leases of one call, so leases
	// of the same TTL stay in step. Tests replace it.
	scale func() float64
}

func newKeeper(c *Client) *keeper {
	return &keeper{
		c:         c,
		leases:    make(map[leaseID]*Lease),
		acquiring: make(map[leaseID]struct{}),
		releasing: make(map[leaseID]int),
		totals:    make(map[string]float64),
		wake:      make(chan struct{}, 1),
		scale:     func() float64 { return 0.9 + 0.2*rand.Float64() },
	}
}

// reserve marks id as being acquired, or fails with ErrDuplicateLease when
// this Client already keeps, acquires or releases that lease.
func (k *keeper) reserve(id leaseID) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case k.leases[id] != nil:
		return fmt.Errorf("%w: %q is held by holder %q", ErrDuplicateLease, id.key, id.holder)
	case k.releasing[id] > 0:
		return fmt.Errorf("%w: %q is being released by holder %q", ErrDuplicateLease, id.key, id.holder)
	}
	if _, ok := k.acquiring[id]; ok {
		return fmt.Errorf("%w: %q is being acquired by holder %q", ErrDuplicateLease, id.key, id.holder)
	}
	k.acquiring[id] = struct{}{}
	return nil
}

// supersededLocked reports whether this Client keeps, or is acquiring, a
// lease of l's holder on l's key other than l: the cluster may have
// answered it with l's own lease and token. k.mu is held.
func (k *keeper) supersededLocked(l *Lease) bool {
	id := leaseID{l.holder, l.key}
	if cur := k.leases[id]; cur != nil && cur != l {
		return true
	}
	_, acquiring := k.acquiring[id]
	return acquiring
}

func (k *keeper) unreserve(id leaseID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.acquiring, id)
}

// start makes the Lease of a granted acquisition and hands it to the
// renewer. The caller holds the reservation of the lease.
//
// If the acquisition took longer than a renewal interval (it waited in
// the queue), SentAt + TTL − margin may be near or past, although the
// cluster granted the lease only now: the grant's own time is unknown to
// the client, SentAt is the only safe lower bound. So start renews once
// first, for up to an interval, and counts from that renewal; if it
// fails, the lease is released and Acquire fails.
func (k *keeper) start(ctx context.Context, key string, info *LeaseInfo, meta *Meta, cfg leaseConfig) (*Lease, error) {
	ttl := cfg.ttl
	if info.TTL > 0 && info.TTL < ttl {
		ttl = info.TTL
	}
	margin := min(cfg.margin, ttl/2)
	interval := ttl / 3
	if cfg.interval != 0 {
		// The cluster may have granted a shorter TTL than asked for.
		interval = min(cfg.interval, (ttl-margin)/2)
	}
	sentAt := meta.SentAt
	renewNow := false
	if time.Since(sentAt) > interval {
		rctx, cancel := context.WithTimeout(ctx, interval)
		_, rmeta, err := k.c.Leases().Renew(rctx, key, cfg.holder, info.Token)
		cancel()
		switch {
		case err == nil:
			sentAt = rmeta.SentAt
		case !transient(err):
			return nil, lostError(key, info.Token, err)
		case ctx.Err() != nil || !time.Now().Before(sentAt.Add(ttl-margin)):
			k.c.releaseQuietly(ctx, key, cfg.holder, info.Token)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("acquired %q (token %d) but gave up before its first renewal: %w", key, info.Token, ctx.Err())
			}
			return nil, fmt.Errorf("%w: lease %q (token %d): the acquisition took too long and its first renewal failed: %w",
				ErrLeaseExpiredLocally, key, info.Token, err)
		default:
			renewNow = true // still inside its deadline: the renewer retries at once
		}
	}
	md := info.Metadata
	if md == nil {
		md = cfg.metadata
	}
	l := &Lease{
		k: k, key: key, holder: cfg.holder, token: info.Token,
		ttl: ttl, margin: margin, interval: interval, strict: cfg.strict, election: cfg.election, metadata: md,
		log: cfg.log, hooks: cfg.hooks,
		deadline:  sentAt.Add(ttl - margin),
		nextRenew: sentAt.Add(scaled(interval, k.scale())),
	}
	if renewNow {
		l.nextRenew = time.Now()
	}
	l.ctx, l.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	k.mu.Lock()
	k.leases[leaseID{l.holder, l.key}] = l
	k.kickLocked()
	k.mu.Unlock()
	fire([]leaseEvent{{l: l, kind: eventAcquired}})
	return l, nil
}

// releaseQuietly releases a lease that is no use to anyone, best effort.
func (c *Client) releaseQuietly(ctx context.Context, key, holder string, token uint64) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, err := c.Leases().Release(rctx, key, holder, token); err != nil {
		c.log.Debug("release failed; the lease will expire", "key", key, "holder", holder, "token", token, "error", err)
	}
}

// kickLocked starts the renewer, or wakes it up to look at the leases
// again. k.mu is held.
func (k *keeper) kickLocked() {
	if !k.running {
		k.running = true
		go k.run()
		return
	}
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// holdsLocked reports whether the Client keeps a lease of holder. k.mu is
// held.
func (k *keeper) holdsLocked(holder string) bool {
	for id := range k.leases {
		if id.holder == holder {
			return true
		}
	}
	return false
}

// endLocked ends l in state with err as its Err and cause: it stops its
// renewals and cancels its context. k.mu is held.
func (k *keeper) endLocked(l *Lease, state leaseState, err error) leaseEvent {
	l.state, l.err = state, err
	id := leaseID{l.holder, l.key}
	if k.leases[id] == l {
		delete(k.leases, id)
		if _, ok := k.totals[l.holder]; ok && !k.holdsLocked(l.holder) {
			delete(k.totals, l.holder) // its last lease: nothing carries the total now
		}
	}
	l.cancel(err)
	if k.running {
		k.kickLocked() // the renewer may have nothing left to do
	}
	if state == leaseReleased {
		return leaseEvent{l: l, kind: eventReleased}
	}
	return leaseEvent{l: l, kind: eventLost, err: err}
}

// endedByOperator reports whether a renewal was refused because an
// operator revoked the lease, disabled its key or prohibited its holder.
func endedByOperator(refusal error) bool {
	var ae *APIError
	if !errors.As(refusal, &ae) {
		return false
	}
	switch ae.Reason {
	case ReasonRevoked, ReasonDisabled, ReasonProhibited:
		return true
	}
	return false
}

// lostError is the Err of a lease whose renewal (or acquisition) the
// cluster refused with err.
func lostError(key string, token uint64, err error) error {
	if errors.Is(err, ErrLeaseLost) {
		return fmt.Errorf("lease %q (token %d): %w", key, token, err)
	}
	return fmt.Errorf("%w: lease %q (token %d): renewal refused: %w", ErrLeaseLost, key, token, err)
}

// renewCall is one RenewMany call in flight.
type renewCall struct {
	holder string
	leases []*Lease
	// refs name leases with the loads to report, total the holder's (nil:
	// none reported), as they were when the call was made.
	refs    []LeaseRef
	total   *float64
	ctx     context.Context
	cancel  context.CancelFunc
	timeout time.Duration // of each attempt
	strict  bool          // of leases WithLoseOnRenewFailure
}

// renewOutcome is the answer to a renewCall.
type renewOutcome struct {
	call    *renewCall
	results []RenewResult
	meta    *Meta
	err     error
	latency time.Duration
}

// run is the renewer goroutine; see keeper.
func (k *keeper) run() {
	outcomes := make(chan renewOutcome)
	var calls []*renewCall
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		k.mu.Lock()
		evs := k.expireLocked(now)
		if len(k.leases) == 0 {
			if len(calls) == 0 {
				k.running = false
				k.mu.Unlock()
				fire(evs)
				return
			}
			for _, c := range calls {
				c.cancel() // nobody is waiting for their answers
			}
		}
		batch := k.dueLocked(now)
		next := k.nextEventLocked(now)
		k.mu.Unlock()
		fire(evs)

		for _, c := range batch {
			calls = append(calls, c)
			go k.renew(c, outcomes)
		}
		timer.Reset(next.Sub(now))
		select {
		case <-timer.C:
		case <-k.wake:
		case o := <-outcomes:
			o.call.cancel()
			calls = slices.DeleteFunc(calls, func(c *renewCall) bool { return c == o.call })
			k.mu.Lock()
			evs := k.applyLocked(o, time.Now())
			k.mu.Unlock()
			fire(evs)
		}
	}
}

// renew makes one call and hands its outcome to the renewer.
func (k *keeper) renew(c *renewCall, out chan<- renewOutcome) {
	start := time.Now()
	results, meta, err := k.c.Leases().renewMany(c.ctx, c.holder, c.refs, renewCallOptions{c.timeout, true, c.strict, c.total})
	if ae := (*APIError)(nil); errors.As(err, &ae) && ae.Code == wire.CodeInvalidBody && carriesLoads(c) {
		// A server older than load reports refuses their fields: a load
		// report must never cost a lease. Renew without them, and send
		// none from now on.
		if !k.noLoads.Swap(true) {
			k.c.log.Warn("the cluster refused a renewal that reported loads; renewals report no load from now on",
				"holder", c.holder, "error", err)
		}
		refs := slices.Clone(c.refs)
		for i := range refs {
			refs[i].Load = nil
		}
		results, meta, err = k.c.Leases().renewMany(c.ctx, c.holder, refs, renewCallOptions{c.timeout, true, c.strict, nil})
	}
	out <- renewOutcome{call: c, results: results, meta: meta, err: err, latency: time.Since(start)}
}

// expireLocked ends the leases whose local deadline has passed. k.mu is
// held.
func (k *keeper) expireLocked(now time.Time) []leaseEvent {
	var evs []leaseEvent
	for _, l := range k.leases {
		if passed(now, l.deadline) {
			evs = append(evs, k.endLocked(l, leaseLost, l.expiredErr()))
		}
	}
	return evs
}

// dueLocked returns the calls to make now: nothing unless a lease is due,
// and then every lease due within half of its interval, one call per
// holder and MaxRenewBatch leases (leases WithLoseOnRenewFailure apart,
// as their calls retry less). k.mu is held.
func (k *keeper) dueLocked(now time.Time) []*renewCall {
	due := false
	for _, l := range k.leases {
		if !l.inflight && !now.Before(l.nextRenew) {
			due = true
			break
		}
	}
	if !due {
		return nil
	}
	type callKind struct {
		holder string
		strict bool
	}
	byKind := make(map[callKind][]*Lease)
	for _, l := range k.leases {
		if !l.inflight && l.nextRenew.Sub(now) <= l.interval/2 {
			kind := callKind{l.holder, l.strict}
			byKind[kind] = append(byKind[kind], l)
		}
	}
	kinds := slices.SortedFunc(maps.Keys(byKind), func(a, b callKind) int {
		return cmp.Or(cmp.Compare(a.holder, b.holder), compareBool(a.strict, b.strict))
	})
	var calls []*renewCall
	for _, kind := range kinds {
		ls := byKind[kind]
		slices.SortFunc(ls, func(a, b *Lease) int { return cmp.Compare(a.key, b.key) })
		for len(ls) > 0 {
			n := min(len(ls), MaxRenewBatch)
			calls = append(calls, k.newCall(kind.holder, ls[:n], now))
			ls = ls[n:]
		}
	}
	return calls
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// newCall prepares the renewal of ls, all of holder and all strict or
// none, and marks them in flight. The call, its retries included, ends by
// itself after the shortest renewal interval among them, so that a failure
// or a hang is reported (eventRenewFailed) within one interval and the
// renewal retried by a new call; and at the last of their deadlines at the
// latest, when its answer could not save any of them. Each attempt is
// bounded by TTL/5 of the shortest lease (at least 200ms, at most
// Config.Timeout and the interval), so that a server that hangs costs only
// part of the time left. k.mu is held.
func (k *keeper) newCall(holder string, ls []*Lease, now time.Time) *renewCall {
	var last time.Time
	minTTL, interval := ls[0].ttl, ls[0].interval
	refs := make([]LeaseRef, len(ls))
	loads := !k.noLoads.Load()
	for i, l := range ls {
		refs[i] = LeaseRef{Key: l.key, Token: l.token}
		if loads {
			refs[i].Load = l.load
		}
		l.inflight = true
		if l.deadline.After(last) {
			last = l.deadline
		}
		minTTL, interval = min(minTTL, l.ttl), min(interval, l.interval)
	}
	if end := now.Add(interval); end.Before(last) {
		last = end
	}
	ctx, cancel := context.WithDeadline(context.Background(), last)
	timeout := min(max(minTTL/5, 200*time.Millisecond), k.c.cfg.Timeout, interval)
	c := &renewCall{holder: holder, leases: slices.Clone(ls), refs: refs, ctx: ctx, cancel: cancel, timeout: timeout, strict: ls[0].strict}
	if t, ok := k.totals[holder]; ok && loads {
		c.total = &t
	}
	return c
}

// carriesLoads reports whether c reports a load.
func carriesLoads(c *renewCall) bool {
	return c.total != nil || slices.ContainsFunc(c.refs, func(r LeaseRef) bool { return r.Load != nil })
}

// nextEventLocked is when the renewer must look again: the earliest local
// deadline or renewal time. k.mu is held.
func (k *keeper) nextEventLocked(now time.Time) time.Time {
	next := now.Add(time.Hour)
	for _, l := range k.leases {
		if l.deadline.Before(next) {
			next = l.deadline
		}
		if !l.inflight && l.nextRenew.Before(next) {
			next = l.nextRenew
		}
	}
	return next
}

// applyLocked applies the outcome of a call to its leases that are still
// held. k.mu is held.
func (k *keeper) applyLocked(o renewOutcome, now time.Time) []leaseEvent {
	var evs []leaseEvent
	factor := k.scale()
	for i, l := range o.call.leases {
		l.inflight = false
		if l.state != leaseHeld {
			continue
		}
		if passed(now, l.deadline) {
			if o.err != nil {
				l.lastErr = o.err
			}
			evs = append(evs, k.endLocked(l, leaseLost, l.expiredErr())) // too late to count
			continue
		}
		err := o.err
		var refusal error
		if err == nil {
			r := o.results[i]
			switch {
			case r.Key != l.key || r.Token != l.token:
				err = fmt.Errorf("renew answer %d is for %q token %d, want %q token %d", i, r.Key, r.Token, l.key, l.token)
			case r.Err != nil:
				refusal = r.Err
			}
		} else if !transient(err) {
			refusal = err
		}
		switch {
		case refusal != nil:
			// Nothing left to release, unless an operator ended the lease:
			// it stays held on the cluster until its deadline, and the
			// holder's Release, once it has stopped, frees it at once.
			// Nor when the secret is not the lease's: releasing needs it too.
			l.freed = errors.Is(refusal, ErrLeaseLost) && !endedByOperator(refusal) || errors.Is(refusal, ErrWrongSecret)
			evs = append(evs, k.endLocked(l, leaseLost, lostError(l.key, l.token, refusal)))
		case err != nil:
			l.failures++
			l.lastErr = err
			l.nextRenew = now.Add(retryDelay(l.interval, l.failures))
			evs = append(evs, leaseEvent{l: l, kind: eventRenewFailed, err: err, deadline: l.deadline})
			if l.strict {
				evs = append(evs, k.endLocked(l, leaseLost, fmt.Errorf("%w: lease %q (token %d): %w", ErrRenewFailed, l.key, l.token, err)))
			}
		default:
			if dl := o.meta.SentAt.Add(l.ttl - l.margin); dl.After(l.deadline) {
				l.deadline = dl
			}
			l.failures, l.lastErr = 0, nil
			l.nextRenew = o.meta.SentAt.Add(scaled(l.interval, factor))
			evs = append(evs, leaseEvent{l: l, kind: eventRenewed, latency: o.latency})
		}
	}
	return evs
}

// retryDelay is the pause before renewing again after the n-th transient
// failure in a row (the call itself has already retried with backoff):
// interval/8, doubling, from 10ms to 1s.
func retryDelay(interval time.Duration, n int) time.Duration {
	d := interval / 8 << min(n-1, 3)
	return min(max(d, 10*time.Millisecond), time.Second)
}

// scaled returns d times f.
func scaled(d time.Duration, f float64) time.Duration {
	return time.Duration(float64(d) * f)
}

// leaseEvent is something to log and report to the hooks once k.mu is
// released.
type leaseEvent struct {
	l        *Lease
	kind     eventKind
	err      error
	latency  time.Duration
	deadline time.Time
}

type eventKind int

const (
	eventAcquired eventKind = iota
	eventRenewed
	eventRenewFailed
	eventLost
	eventReleased
)

// fire logs evs and calls the hooks. It runs without k.mu.
func fire(evs []leaseEvent) {
	for _, ev := range evs {
		l, h := ev.l, ev.l.hooks
		switch ev.kind {
		case eventAcquired:
			l.log.Debug("lease_acquired", "key", l.key, "holder", l.holder, "token", l.token, "ttl", l.ttl)
			if h.OnAcquired != nil {
				h.OnAcquired(l)
			}
		case eventRenewed:
			if h.OnRenewed != nil {
				h.OnRenewed(l, ev.latency)
			}
		case eventRenewFailed:
			l.log.Warn("lease_renew_failed", "key", l.key, "holder", l.holder, "token", l.token,
				"deadline_in", time.Until(ev.deadline).Round(time.Millisecond), "error", ev.err)
			if h.OnRenewFailed != nil {
				h.OnRenewFailed(l, ev.err)
			}
		case eventLost:
			l.log.Warn("lease_lost", "key", l.key, "holder", l.holder, "token", l.token, "error", ev.err)
			if l.election != "" {
				l.log.Info("leader_lost", "election", l.election, "key", l.key, "holder", l.holder, "token", l.token, "error", ev.err)
			}
			if h.OnLost != nil {
				h.OnLost(l, ev.err)
			}
		}
	}
}

// deadlinePassed reports whether now is at or past deadline on the
// monotonic clock or on the wall clock. The monotonic clock is what
// deadlines are made of, but on Linux it stops while the machine is
// suspended, and the servers' clocks do not: after a resume the wall clock
// notices the passed deadline first. A wall clock stepped forward can only
// end a lease early, never keep it late. The client asks it through passed
// (unsafe_off.go).
func deadlinePassed(now, deadline time.Time) bool {
	return !now.Before(deadline) || !now.Round(0).Before(deadline.Round(0))
}
