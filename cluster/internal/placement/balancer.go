package placement

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
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
	// it is applied (nil) or failed.
	Submit func(ctx context.Context, cmd fsm.Command) error
	// Workers lists the live workers; WorkersChanged is signalled when
	// the gossip membership changes.
	Workers        func() []membership.Member
	WorkersChanged <-chan struct{}
	Logger         hclog.Logger
	Clock          clock.Clock
	Debounce       time.Duration
	Settle         time.Duration
	// Admit, when not nil (ACLs on), says whether a live worker may be
	// given keys of a group.
	Admit func(worker, group string) bool
	// Stuck tracks the workers that do not take their targets (see
	// Tracker); Check is how often the balancer looks at the leases.
	Stuck *Tracker
	Check time.Duration
}

// Balancer runs on the established leader: it computes the target owner of
// every key of every group over the live workers (bounded-load rendezvous
// hashing, see place) and writes the plan through Raft when it changes, so
// every node shows it and a new leader starts from it. It reacts to gossip
// membership changes and group changes, debounced, and re-checks
// periodically. It never touches a lease: the plan is intent only, and a
// worker that gossip declares dead may be alive and holding its leases.
type Balancer struct{ cfg BalancerConfig }

// NewBalancer returns the balancer of one leadership.
func NewBalancer(cfg BalancerConfig) *Balancer { return &Balancer{cfg: cfg} }

// Run plans until ctx ends (leadership lost or the proposer stopped), on
// the caller's goroutine.
func (b *Balancer) Run(ctx context.Context) {
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
	var lastIndex, lastACL uint64
	for {
		b.rebalance(ctx)
		lastIndex, lastACL = b.cfg.State.GroupIndex(), b.cfg.State.ACLIndex()
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
				if b.stuckChanged() {
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
	if len(groups) == 0 {
		return
	}
	workers := b.cfg.Workers()
	for _, g := range groups {
		stuck, plan, ncands := b.planGroup(g, workers)
		if !slices.Equal(stuck, g.Stuck) {
			if err := b.cfg.Submit(ctx, fsm.MarkStuck{Group: g.Name, Workers: stuck}); err != nil {
				b.cfg.Logger.Warn("writing stuck workers failed", "group", g.Name, "error", err)
				continue
			}
			b.cfg.Logger.Info("workers_stuck", "group", g.Name, "stuck", stuck, "before", g.Stuck)
		}
		if maps.Equal(plan, g.Assignment) {
			continue
		}
		err := b.cfg.Submit(ctx, fsm.Assign{Group: g.Name, Assignment: plan})
		if err != nil {
			b.cfg.Logger.Warn("writing placement failed", "group", g.Name, "error", err)
			continue
		}
		b.cfg.Logger.Info("placement_changed", "group", g.Name, "keys", len(g.Keys), "owned", len(plan),
			"workers", ncands, "moved", movedKeys(g.Assignment, plan))
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
func (b *Balancer) planGroup(g *fsm.Group, workers []membership.Member) (stuck []string, plan map[string]string, ncands int) {
	stuck = b.cfg.Stuck.Observe(g, b.cfg.State.Get, b.cfg.State.Control)
	var cands []candidate
	seen := make(map[string]bool)
	healthy := false
	for _, w := range workers {
		// Two processes announcing one id count once: they share the
		// id's keys, and their leases decide which of them works.
		id := w.Meta.ID
		if w.Serves(g.Name) && !w.Meta.Draining && !b.cfg.State.Drained(id) && !seen[id] &&
			(b.cfg.Admit == nil || b.cfg.Admit(id, g.Name)) {
			seen[id] = true
			cands = append(cands, candidate{id: id, capacity: w.Meta.Capacity})
			healthy = healthy || !slices.Contains(stuck, id)
		}
	}
	if !healthy {
		return stuck, place(g.Keys, cands, g.MaxPerWorker, g.Assignment, b.cfg.State.Control), len(cands)
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
	return stuck, place(g.Keys, kept, g.MaxPerWorker, prev, b.cfg.State.Control), len(kept)
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
