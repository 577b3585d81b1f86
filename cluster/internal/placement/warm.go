package placement

import (
	"maps"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster/internal/membership"
	"github.com/tenure-io/tenure/fsm"
)

// preparing is a key the balancer had a worker prepare, and since when
// (on this leader's clock: a new leader gives every prepare its full
// time again).
type preparing struct {
	worker string
	since  time.Time
}

// planned returns g as the planner and the availability budget see it:
// each key being prepared already targeted at the worker preparing it.
// The move was planned, and counted in the move budget, when the prepare
// began; the key counts as moving until it has arrived.
func planned(g *fsm.Group) *fsm.Group {
	if len(g.Prepare) == 0 {
		return g
	}
	v := *g
	v.Assignment = maps.Clone(g.Assignment)
	if v.Assignment == nil {
		v.Assignment = make(map[string]string, len(g.Prepare))
	}
	maps.Copy(v.Assignment, g.Prepare)
	return &v
}

// warm turns the planned moves of g's keys into warm hand-offs where it
// can, and returns the assignment and the prepares to write. A key that
// plan moves from the live worker that holds it (and is its current
// target) to a worker that announced a prepare time (wire.MemberMeta's
// PrepareMS) stays targeted at its holder, and the new worker is named to
// prepare it, until that worker says it is ready (fsm.Prepared retargets
// the key in the log) or its prepare time has passed on this leader's
// clock: then the key moves as any other. Every other move is left as it
// is: a key nobody holds, or held by a worker that is gone, draining, or
// refused by the key's controls, has no warm owner to wait for.
func (b *Balancer) warm(g *fsm.Group, plan map[string]string, workers []membership.Member) (map[string]string, map[string]string) {
	prepareFor := make(map[string]time.Duration)
	gone := make(map[string]bool) // a holder id that is not live, or is draining
	for _, w := range workers {
		id := w.Meta.ID
		if w.Meta.Draining {
			gone[id] = true
		}
		if d := PrepareTime(w.Meta); d > 0 && (prepareFor[id] == 0 || d < prepareFor[id]) {
			prepareFor[id] = d // two processes with one id: the shorter time
		}
	}
	live := make(map[string]bool, len(workers))
	for _, w := range workers {
		live[w.Meta.ID] = true
	}
	now := b.cfg.Clock.Now()
	seen := b.prepares[g.Name]
	next := make(map[string]preparing)
	out := plan
	var prep map[string]string
	for k, to := range plan {
		from := g.Assignment[k]
		if from == "" || from == to || prepareFor[to] == 0 || !live[from] || gone[from] {
			continue
		}
		l := b.cfg.State.Get(k)
		if l == nil || !l.Held || wire.WorkerOf(l.Holder) != from {
			continue
		}
		if ctl := b.cfg.State.Control(k); ctl.Disabled || ctl.Prohibits(l.Holder) {
			continue
		}
		p, ok := seen[k]
		if !ok || p.worker != to {
			p = preparing{worker: to, since: now}
		}
		next[k] = p // kept until the move is written: a refused plan does not restart the time
		if now.Sub(p.since) >= prepareFor[to] {
			b.cfg.Logger.Info("prepare_timed_out", "group", g.Name, "key", k, "worker", to, "after", now.Sub(p.since))
			continue
		}
		if prep == nil {
			out, prep = maps.Clone(plan), make(map[string]string)
		}
		out[k], prep[k] = from, to
	}
	if len(next) > 0 {
		b.prepares[g.Name] = next
		b.staging = true // look again at every check: a prepare time may pass
	} else {
		delete(b.prepares, g.Name)
	}
	return out, prep
}

// PrepareTime is the time a worker announced it takes at most to prepare
// a key, capped at wire.MaxPrepare; 0: it does not prepare.
func PrepareTime(m wire.MemberMeta) time.Duration {
	if m.PrepareMS <= 0 {
		return 0
	}
	return min(time.Duration(m.PrepareMS)*time.Millisecond, wire.MaxPrepare)
}
