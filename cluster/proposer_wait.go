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
	if l := p.machine.Get(key); l != nil && !l.Held {
		o.waitEnd = time.Time{}
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
