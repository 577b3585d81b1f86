package cluster

import (
	"slices"
	"time"

	"github.com/tenure-io/tenure/fsm"
)

// The queues of blocking acquirers: a waiter joins the queue of its key
// when its acquire finds the key held, leaves it when it is granted, its
// wait ends, its caller goes away, or the proposer stops. All of it runs on
// the proposer's run goroutine.

// queueForKey puts o, a blocking acquire that found key held, at the end of
// the key's queue, and arms the timer that ends its wait.
func (p *proposer) queueForKey(o *op, key string) {
	o.queued = true
	p.waiting.Add(1)
	p.waiters[key] = append(p.waiters[key], o)
	p.kicked[key] = struct{}{}
	o.timer = time.AfterFunc(time.Until(o.waitEnd), func() {
		select {
		case p.timeouts <- o:
		case <-p.stopped:
		}
	})
}

func (p *proposer) unqueue(o *op) {
	if !o.queued {
		return
	}
	o.queued = false
	p.waiting.Add(-1)
	o.timer.Stop()
	key := o.cmd.(fsm.Acquire).Key
	q := slices.DeleteFunc(p.waiters[key], func(w *op) bool { return w == o })
	if len(q) == 0 {
		delete(p.waiters, key)
	} else {
		p.waiters[key] = q
	}
}

// dropWaiter ends a wait. A cancelled caller is gone and learns nothing;
// one whose op is not queued yet is marked so that it never will be. At the
// end of its wait a caller learns who holds the key — or, if the key is
// free by then, gets one last plain attempt at it.
func (p *proposer) dropWaiter(o *op, timedOut bool) {
	if !timedOut {
		o.cancelled = true
	}
	if !o.queued {
		return
	}
	p.unqueue(o)
	if !timedOut {
		return
	}
	key := o.cmd.(fsm.Acquire).Key
	if l := p.machine.Get(key); o.noEntry || l != nil && !l.Held {
		// One last plain attempt, through the log. A waiter queued without
		// an entry needs it even if the key is held: only a commit shows
		// this leader still leads, so that a leader cut off from the
		// others answers leadership_lost rather than who held the key.
		o.waitEnd, o.noEntry = time.Time{}, false
		p.pending = append([]*op{o}, p.pending...)
		return
	}
	p.metrics.Conflicts.Inc()
	o.done <- opResult{res: fsm.Result{Code: fsm.Held, Lease: p.machine.Get(key)}}
}

// failAll answers everything still queued once the proposer stops.
func (p *proposer) failAll() {
	close(p.stopped)
	for _, q := range p.waiters {
		for _, o := range q {
			o.timer.Stop()
			o.done <- opResult{err: ErrLeadershipLost}
		}
	}
	p.waiters = nil
	p.waiting.Store(0)
	for _, o := range p.pending {
		o.done <- opResult{err: ErrLeadershipLost}
	}
	p.pending = nil
	for {
		select {
		case o := <-p.in:
			o.done <- opResult{err: ErrLeadershipLost}
		default:
			return
		}
	}
}

// waitsWithoutEntry queues o, a blocking acquire, without proposing it when
// the state machine could only refuse it as held: another holder has the
// key (or its holder's lease is ending), the key's controls let o's holder
// have it, and no command already in the batch changes the key (touched
// holds the batch's keys, and "" once it holds a command that may change
// keys it does not name).
// Such an acquire changes nothing, so it needs no log entry; the release
// that frees the key grants it in the release's own entry, and a hand-off
// costs one commit. The state read is exact: the proposer is the only
// writer of leases during a term and applies one batch at a time, so the
// machine holds every batch before this one. The waiter learns nothing
// before its grant (committed) or the end of its wait, which dropWaiter
// answers with a plain attempt through the log. It reports whether o was
// queued.
func (p *proposer) waitsWithoutEntry(o *op, touched map[string]bool) bool {
	a, ok := o.cmd.(fsm.Acquire)
	if !ok || o.cancelled || o.waitEnd.IsZero() || !time.Now().Before(o.waitEnd) || touched[a.Key] || touched[""] ||
		int(p.waiting.Load()) >= p.maxWaiters {
		return false
	}
	cur := p.machine.Get(a.Key)
	if cur == nil || !cur.Held || (cur.Holder == a.Holder && cur.Ending == fsm.ReasonNone) {
		return false
	}
	if ctl := p.machine.Control(a.Key); ctl.Disabled || ctl.Prohibits(a.Holder) {
		return false
	}
	o.noEntry = true
	p.queueForKey(o, a.Key)
	return true
}

// commandKey returns the one key a lease command changes, or "" for a
// command that may change others (or none).
func commandKey(c fsm.Command) string {
	switch c := c.(type) {
	case fsm.Acquire:
		return c.Key
	case fsm.Release:
		return c.Key
	case fsm.Revoke:
		return c.Key
	case fsm.Expire:
		return c.Key
	}
	return ""
}
