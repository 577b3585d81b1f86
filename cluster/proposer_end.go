package cluster

import (
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/fsm"
)

// EndedLease is a lease that an operator's revoke, disable or prohibit
// ended, as the API answers it (wire.RevokedLease). Its renewals are
// refused from the moment the command applied; FreesIn is the time left
// until the key frees (0 when Forced): the holder's current deadline on
// the leader.
type EndedLease = wire.RevokedLease

// ended tells the lessor about the leases that r ended: an ending lease's
// renewals are refused from now on and it frees when its deadline passes;
// a lease freed at once is forgotten and its key offered to the first
// waiter in the next batch. It runs on the run goroutine.
func (p *proposer) ended(r fsm.Result) []EndedLease {
	if len(r.Ended) == 0 {
		return nil
	}
	out := make([]EndedLease, 0, len(r.Ended))
	for _, l := range r.Ended {
		e := EndedLease{Key: l.Key, Holder: l.Holder, Token: l.Token}
		if l.Held {
			e.Reason = l.Ending.String()
			left, ok := p.lessor.End(l.Key, l.Token, e.Reason)
			if !ok {
				// Not tracked (it cannot happen on an established leader):
				// a full TTL is the most it can take.
				left = l.TTL
			}
			e.FreesIn = left
		} else {
			e.Reason, e.Forced = l.Reason.String(), true
			p.lessor.Remove(l.Key, l.Token)
			p.kicked[l.Key] = struct{}{}
			p.metrics.Releases.Inc()
		}
		out = append(out, e)
	}
	return out
}

// firstAcceptable returns the first waiter for key that the key's current
// controls let have it, or nil. Waiters ahead of it that the controls
// refuse (the key disabled, or the waiter prohibited) are told so and
// dropped: they could never be granted, and must not hold up the ones
// behind them.
func (p *proposer) firstAcceptable(key string) *op {
	ctl := p.machine.Control(key)
	for {
		q := p.waiters[key]
		if len(q) == 0 {
			return nil
		}
		w := q[0]
		code := fsm.Code(0)
		switch {
		case ctl.Disabled:
			code = fsm.Disabled
		case ctl.Prohibits(w.cmd.(fsm.Acquire).Holder):
			code = fsm.Prohibited
		default:
			return w
		}
		p.unqueue(w)
		w.done <- opResult{res: fsm.Result{Code: code, Lease: p.machine.Get(key)}}
	}
}
