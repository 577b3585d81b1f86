package placement

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster/internal/clock"
	"github.com/tenure-io/tenure/cluster/internal/membership"
	"github.com/tenure-io/tenure/fsm"
)

// BalancerConfig is what a Balancer works with. Every field but Admit is
// required.
type BalancerConfig struct {
	// State is the replicated state the balancer plans from.
	State *fsm.Machine
	// Submit proposes cmd through the leader's proposer and returns when
	// it is applied (nil) or failed; ErrPlanRefused when the state
	// machine refused an Assign whose Base was no longer the group's.
	Submit func(ctx context.Context, cmd fsm.Command) error
	// Workers lists the live workers; WorkersChanged is signalled when
	// the gossip membership changes.
	Workers        func() []membership.Member
	WorkersChanged <-chan struct{}
	// WorkersIndex, when not nil, changes when the workers that announce
	// themselves in the replicated state (presence leases) change: the
	// balancer looks at it at every Check and plans again when it moved,
	// as on a gossip change (not at every change of the state: it may
	// cost a scan of the presence leases).
	WorkersIndex func() uint64
	Logger       hclog.Logger
	Clock        clock.Clock
	Debounce     time.Duration
	Settle       time.Duration
	// Admit, when not nil (ACLs on), says whether a live worker may be
	// given keys of a group.
	Admit func(worker, group string) bool
	// Stuck tracks the workers that do not take their targets (see
	// Tracker); Check is how often the balancer looks at the leases.
	Stuck *Tracker
	Check time.Duration
	// Loads are the loads that renewals reported to this leader: the
	// weights of the keys of a group balanced by load. Nil: none.
	Loads *Loads
}

// ErrPlanRefused is Submit's error for an Assign that the state machine
// refused (fsm.CASFailed): a worker's Prepared changed the plan since the
// balancer read it.
var ErrPlanRefused = errors.New("plan refused: the assignment changed since it was read")

// Balancer runs on the established leader: it computes the target owner of
// every key of every group over the live workers (bounded-load rendezvous
// hashing, see place) and writes the plan through Raft when it changes, so
// every node shows it and a new leader starts from it. It reacts to gossip
// membership changes and group changes, debounced, and re-checks
// periodically. It never touches a lease: the plan is intent only, and a
// worker that gossip declares dead may be alive and holding its leases.
type Balancer struct {
	cfg BalancerConfig
	// start is when Run started; moves records, by group balanced by
	// load, the keys moved for balance in its current move interval.
	// Both are the Run goroutine's.
	start time.Time
	moves map[string]*moveWindow
	// staging: the last pass held moves back for a group's availability
	// budget, or keys are being prepared; the balancer looks again at
	// every check until none is.
	staging bool
	// prepares are, by group, the keys being prepared (warm.go).
	prepares map[string]map[string]preparing
}

// moveWindow counts the keys of a group moved for balance since start.
type moveWindow struct {
	start time.Time
	moved int
}

// NewBalancer returns the balancer of one leadership.
func NewBalancer(cfg BalancerConfig) *Balancer {
	if cfg.Loads == nil {
		cfg.Loads = NewLoads(cfg.Clock, time.Minute) // no reports: every key weighs the same
	}
	return &Balancer{cfg: cfg, moves: make(map[string]*moveWindow), prepares: make(map[string]map[string]preparing)}
}

// Run plans until ctx ends (leadership lost or the proposer stopped), on
// the caller's goroutine.
func (b *Balancer) Run(ctx context.Context) {
	b.start = b.cfg.Clock.Now()
	// A new leader's view of the workers may be partial (its gossip may
	// have just started, or rejoined): let it settle before the first plan,
	// or it would move keys away from workers it has not heard of yet.
	if !b.sleep(ctx, b.cfg.Settle) {
		return
	}
	const tickEvery = 5 * time.Second
	tick := b.cfg.Clock.NewTimer(tickEvery)
	defer tick.Stop()
	check := b.cfg.Clock.NewTimer(b.cfg.Check)
	defer check.Stop()
	var lastIndex, lastACL, lastWorkers uint64
	workersIndex := func() uint64 {
		if b.cfg.WorkersIndex == nil {
			return 0
		}
		return b.cfg.WorkersIndex()
	}
	for {
		b.rebalance(ctx)
		lastIndex, lastACL, lastWorkers = b.cfg.State.GroupIndex(), b.cfg.State.ACLIndex(), workersIndex()
		// Wait for something that may change the plan.
	wait:
		for {
			changed := b.cfg.State.Changed()
			select {
			case <-ctx.Done():
				return
			case <-b.cfg.WorkersChanged:
				break wait
			case <-tick.C():
				tick.Reset(tickEvery)
				break wait
			case <-check.C():
				check.Reset(b.cfg.Check)
				if b.stuckChanged() || b.staging || workersIndex() != lastWorkers {
					break wait
				}
			case <-changed:
				if b.cfg.State.GroupIndex() != lastIndex || b.cfg.State.ACLIndex() != lastACL {
					break wait
				}
			}
		}
		// Debounce: let a burst of joins or edits settle into one plan.
		if !b.sleep(ctx, b.cfg.Debounce) {
			return
		}
	}
}

// sleep waits d on the clock and reports whether ctx is still live.
func (b *Balancer) sleep(ctx context.Context, d time.Duration) bool {
	t := b.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// rebalance writes the new plan of every group whose plan changed.
func (b *Balancer) rebalance(ctx context.Context) {
	groups, _ := b.cfg.State.Groups()
	b.cfg.Stuck.forget(groups) // also when the last group is gone
	b.cfg.Loads.Sweep()        // and the reports of any holder
	if len(groups) == 0 {
		return
	}
	workers := b.cfg.Workers()
	for name := range b.moves {
		if !slices.ContainsFunc(groups, func(g *fsm.Group) bool { return g.Name == name }) {
			delete(b.moves, name)
		}
	}
	for name := range b.prepares {
		if !slices.ContainsFunc(groups, func(g *fsm.Group) bool { return g.Name == name }) {
			delete(b.prepares, name)
		}
	}
	b.staging = false
	for _, g := range groups {
		// Plan as if every key being prepared had arrived (planned).
		v := planned(g)
		stuck, plan, ncands, moved := b.planGroup(v, workers)
		plan, moved = b.stage(v, plan, workers, moved)
		plan, prepare := b.warm(g, plan, workers)
		if !slices.Equal(stuck, g.Stuck) {
			if err := b.cfg.Submit(ctx, fsm.MarkStuck{Group: g.Name, Workers: stuck}); err != nil {
				b.cfg.Logger.Warn("writing stuck workers failed", "group", g.Name, "error", err)
				continue
			}
			b.cfg.Logger.Info("workers_stuck", "group", g.Name, "stuck", stuck, "before", g.Stuck)
		}
		if maps.Equal(plan, g.Assignment) && maps.Equal(prepare, g.Prepare) {
			continue
		}
		a := fsm.Assign{Group: g.Name, Assignment: plan, Prepare: prepare}
		if len(prepare) > 0 || len(g.Prepare) > 0 {
			// A worker's Prepared may retarget a key between this read
			// of g and the write: then this plan is refused, and the
			// next check plans again.
			a.Base = g.AssignIndex
		}
		err := b.cfg.Submit(ctx, a)
		refused := errors.Is(err, ErrPlanRefused)
		if w := b.moves[g.Name]; w != nil && !refused {
			// The budget() of this pass made w. A failed write counts
			// too: its outcome may be unknown, and a spent budget only
			// delays moves. A plan the state machine refused moved
			// nothing.
			w.moved += moved
		}
		if refused {
			b.staging = true // plan again at the next check
			continue
		}
		if err != nil {
			b.cfg.Logger.Warn("writing placement failed", "group", g.Name, "error", err)
			continue
		}
		b.cfg.Logger.Info("placement_changed", "group", g.Name, "keys", len(g.Keys), "owned", len(plan),
			"workers", ncands, "moved", movedKeys(g.Assignment, plan), "moved_for_load", moved, "preparing", len(prepare))
	}
}

// planGroup computes the stuck workers of g and its next plan over the
// live workers, and says how many workers may own its keys.
//
// Stuck workers are held back only while another worker may take keys:
// when every worker of the group is stuck (a fault between the workers and
// the servers, more likely than every worker being wedged), moving keys
// helps nobody, and the plan stays as if none were stuck, so the workers
// take their keys the moment they can.
//
// A group balanced by load is planned by placeByLoad, which also says how
// many keys it moved for balance (moved), within the group's budget.
func (b *Balancer) planGroup(g *fsm.Group, workers []membership.Member) (stuck []string, plan map[string]string, ncands, moved int) {
	stuck = b.cfg.Stuck.Observe(g, b.cfg.State.Get, b.cfg.State.Control)
	cands := candidates(g, workers, b.cfg.State.Drained, b.cfg.Admit)
	healthy := slices.ContainsFunc(cands, func(c candidate) bool { return !slices.Contains(stuck, c.id) })
	if !healthy {
		plan, moved = b.place(g, cands, g.Assignment)
		return stuck, plan, len(cands), moved
	}
	prev, held := b.keepHeld(g, stuck)
	kept := cands[:0]
	for _, c := range cands {
		if slices.Contains(stuck, c.id) {
			// A stuck worker keeps what it holds and gets nothing else;
			// holding nothing, it is no candidate.
			if held[c.id] == 0 {
				continue
			}
			c.keepOnly = true
			if c.capacity == 0 || c.capacity > held[c.id] {
				c.capacity = held[c.id]
			}
		}
		kept = append(kept, c)
	}
	plan, moved = b.place(g, kept, prev)
	return stuck, plan, len(kept), moved
}

// place plans g over cands from prev: by count, or by load within the
// group's move budget.
func (b *Balancer) place(g *fsm.Group, cands []candidate, prev map[string]string) (map[string]string, int) {
	if g.Balance == nil || !g.Balance.ByLoad {
		return place(g.Keys, cands, g.MaxPerWorker, prev, b.cfg.State.Control), 0
	}
	s := loadSettings{Threshold: g.Balance.Threshold, Budget: b.budget(g)}
	return placeByLoad(g.Keys, cands, g.MaxPerWorker, prev, b.cfg.State.Control, b.weights(g), s)
}

// budget is how many keys of g the balancer may still move for balance
// in the current move interval. A new leader moves none during its first
// interval, nor before the group's grace (twice the longest TTL of its
// leases, or its stuck grace) has passed: it learns the loads from the
// renewals first, which come every third of a TTL.
func (b *Balancer) budget(g *fsm.Group) int {
	now := b.cfg.Clock.Now()
	interval := g.Balance.MoveInterval
	if now.Sub(b.start) < max(interval, groupGrace(g, b.cfg.State.Get, DefaultStuckGrace)) {
		return 0
	}
	w := b.moves[g.Name]
	if w == nil || now.Sub(w.start) >= interval {
		w = &moveWindow{start: now}
		b.moves[g.Name] = w
	}
	return max(0, g.Balance.MoveBudget-w.moved)
}

// weights returns the load of each key of g as the planner weighs it:
// the operator's weight, else the average of the key's reports, else the
// mean of those known (1 when none is). A key reported idle weighs almost
// nothing, but never zero.
func (b *Balancer) weights(g *fsm.Group) func(string) float64 { return keyWeights(g, b.cfg.Loads) }

// keyWeights is Balancer.weights with the loads given (nil: none).
func keyWeights(g *fsm.Group, loads *Loads) func(string) float64 {
	var set map[string]float64
	if g.Balance != nil {
		set = g.Balance.Weights
	}
	known := make(map[string]float64, len(g.Keys))
	sum := 0.0
	for _, k := range g.Keys {
		w, ok := set[k]
		if !ok && loads != nil {
			w, ok = loads.Key(k)
		}
		if ok {
			known[k] = w
			sum += w
		}
	}
	mean := 1.0
	if len(known) > 0 && sum > 0 {
		mean = sum / float64(len(known))
	}
	return func(k string) float64 {
		w, ok := known[k]
		if !ok {
			return mean
		}
		return max(w, mean*1e-6, math.SmallestNonzeroFloat64)
	}
}

// stage holds back the moves of plan that g's availability budget
// (Balance.MaxMoving) does not allow yet, and returns the plan to write
// and how many of the planner's moved keys for load it keeps. A key is
// unowned when it is enabled, free and has a target (now or in plan);
// it is moving when a live worker holds it and the current plan targets
// another. A key held by a live worker that plan would target elsewhere
// may start moving only while the unowned and moving keys are fewer than
// MaxMoving, in key order; the others keep their holder as target for
// now. Keys whose holder is not a live worker, or is refused by the key's
// controls, move at once: that is no planned move.
func (b *Balancer) stage(g *fsm.Group, plan map[string]string, workers []membership.Member, moved int) (map[string]string, int) {
	if g.Balance == nil || g.Balance.MaxMoving == 0 {
		return plan, moved
	}
	live := make(map[string]bool, len(workers))
	for _, w := range workers {
		live[w.Meta.ID] = true
	}
	busy := 0
	type hold struct{ key, worker string }
	var want []hold
	for _, k := range g.Keys {
		ctl := b.cfg.State.Control(k)
		if ctl.Disabled {
			continue
		}
		l := b.cfg.State.Get(k)
		if l == nil || !l.Held {
			if g.Assignment[k] != "" || plan[k] != "" {
				busy++
			}
			continue
		}
		x := wire.WorkerOf(l.Holder)
		switch {
		case !live[x] || ctl.Prohibits(l.Holder):
		case g.Assignment[k] != x:
			busy++
		case plan[k] != x:
			want = append(want, hold{k, x})
		}
	}
	room := max(0, g.Balance.MaxMoving-busy)
	if len(want) <= room {
		return plan, moved
	}
	out := maps.Clone(plan)
	for _, h := range want[room:] {
		out[h.key] = h.worker
	}
	b.staging = true
	return out, min(moved, movedKeys(g.Assignment, out))
}

// candidates are the workers that may own keys of g among the live
// workers: serving it, not draining or drained, and admitted (admit nil:
// ACLs off). Two processes announcing one id count once: they share the
// id's keys, and their leases decide which of them works.
func candidates(g *fsm.Group, workers []membership.Member, drained func(string) bool, admit func(worker, group string) bool) []candidate {
	var out []candidate
	seen := make(map[string]bool)
	for _, w := range workers {
		id := w.Meta.ID
		if w.Serves(g.Name) && !w.Meta.Draining && !drained(id) && !seen[id] && (admit == nil || admit(id, g.Name)) {
			seen[id] = true
			out = append(out, candidate{id: id, capacity: w.Meta.Capacity, loadCap: loadCapacity(w.Meta.LoadCapacity)})
		}
	}
	return out
}

// loadCapacity is the load capacity a worker announced, as the planner
// takes it: gossip is a hint, so a capacity outside the rule of loads
// (wire.LoadProblem), or too small to divide by, counts as none.
func loadCapacity(c float64) float64 {
	if wire.LoadProblem(c) != "" || c < 1e-9 {
		return 0
	}
	return c
}

// RelativeLoads is the load of each worker that may own keys of g (the
// weights of the keys the plan targets at it, weighed as the balancer
// weighs them) over its fair share of the load of the planned keys: for a
// group balanced by load, what the balancer keeps within the group's
// imbalance. It is nil for a group with no planned load, and for a group
// placed by count whose keys report no load.
func RelativeLoads(g *fsm.Group, workers []membership.Member, drained func(string) bool, admit func(worker, group string) bool,
	control func(string) fsm.KeyControl, loads *Loads) map[string]float64 {
	if (g.Balance == nil || !g.Balance.ByLoad) && (loads == nil || !slices.ContainsFunc(g.Keys, func(k string) bool { _, ok := loads.Key(k); return ok })) {
		return nil
	}
	p := newLoadPlanner(g.Keys, candidates(g, workers, drained, admit), g.MaxPerWorker, control, keyWeights(g, loads))
	p.keep(g.Assignment)
	share := p.ownedShares()
	if share == nil {
		return nil
	}
	out := make(map[string]float64, len(p.ws))
	for i, w := range p.ws {
		out[w.id] = p.load[i] / share[i]
	}
	return out
}

// keepHeld returns the previous plan of g without the keys targeted at a
// stuck worker that it does not hold (they go to the next workers in
// rendezvous order), and how many keys each stuck worker holds among those
// targeted at it.
func (b *Balancer) keepHeld(g *fsm.Group, stuck []string) (map[string]string, map[string]int) {
	if len(stuck) == 0 {
		return g.Assignment, nil
	}
	prev := make(map[string]string, len(g.Assignment))
	held := make(map[string]int)
	for k, w := range g.Assignment {
		if slices.Contains(stuck, w) {
			l := b.cfg.State.Get(k)
			if l == nil || !l.Held || !Holds(l.Holder, w) {
				continue
			}
			held[w]++
		}
		prev[k] = w
	}
	return prev, held
}

// stuckChanged looks at the leases of every group and reports whether the
// set of stuck workers of one of them changed (the plan must follow).
func (b *Balancer) stuckChanged() bool {
	groups, _ := b.cfg.State.Groups()
	changed := false
	for _, g := range groups {
		if !slices.Equal(b.cfg.Stuck.Observe(g, b.cfg.State.Get, b.cfg.State.Control), g.Stuck) {
			changed = true
		}
	}
	return changed
}

func movedKeys(a, b map[string]string) int {
	n := 0
	for k, w := range b {
		if a[k] != w {
			n++
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			n++
		}
	}
	return n
}
