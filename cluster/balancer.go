package cluster

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/fsm"
)

// balancer runs on the established leader: it computes the target owner of
// every key of every group over the live workers (bounded-load rendezvous
// hashing, see place) and writes the plan through Raft when it changes, so
// every node shows it and a new leader starts from it. It reacts to gossip
// membership changes and group changes, debounced, and re-checks
// periodically. It never touches a lease: the plan is intent only, and a
// worker that gossip declares dead may be alive and holding its leases.
//
// run returns when ctx ends (leadership lost or the proposer stopped).
type balancer struct {
	p       *proposer
	machine *fsm.Machine
	// members lists the gossip members; membersChanged is signalled when
	// they change.
	members        func() []Member
	membersChanged <-chan struct{}
	log            hclog.Logger
	debounce       time.Duration
	settle         time.Duration
	// admit, when not nil (ACLs on), says whether a live worker may be
	// given keys of a group; see Node.admitWorker.
	admit func(worker, group string) bool
	// stuck tracks the workers that do not take their targets (see
	// stuckTracker); check is how often it looks at the leases.
	stuck *stuckTracker
	check time.Duration
}

func (b *balancer) run(ctx context.Context) {
	// A new leader's view of the workers may be partial (its gossip may
	// have just started, or rejoined): let it settle before the first plan,
	// or it would move keys away from workers it has not heard of yet.
	select {
	case <-ctx.Done():
		return
	case <-time.After(b.settle):
	}
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	check := time.NewTicker(b.check)
	defer check.Stop()
	var lastIndex, lastACL uint64
	for {
		b.rebalance(ctx)
		lastIndex, lastACL = b.machine.GroupIndex(), b.machine.ACLIndex()
		// Wait for something that may change the plan.
	wait:
		for {
			changed := b.machine.Changed()
			select {
			case <-ctx.Done():
				return
			case <-b.membersChanged:
				break wait
			case <-tick.C:
				break wait
			case <-check.C:
				if b.stuckChanged() {
					break wait
				}
			case <-changed:
				if b.machine.GroupIndex() != lastIndex || b.machine.ACLIndex() != lastACL {
					break wait
				}
			}
		}
		// Debounce: let a burst of joins or edits settle into one plan.
		select {
		case <-ctx.Done():
			return
		case <-time.After(b.debounce):
		}
	}
}

// rebalance writes the new plan of every group whose plan changed.
func (b *balancer) rebalance(ctx context.Context) {
	groups, _ := b.machine.Groups()
	b.stuck.forget(groups) // also when the last group is gone
	if len(groups) == 0 {
		return
	}
	workers := liveWorkers(b.members())
	for _, g := range groups {
		stuck, plan, ncands := b.planGroup(g, workers)
		if !slices.Equal(stuck, g.Stuck) {
			if _, err := b.p.submit(ctx, &op{cmd: fsm.MarkStuck{Group: g.Name, Workers: stuck}}); err != nil {
				b.log.Warn("writing stuck workers failed", "group", g.Name, "error", err)
				continue
			}
			b.log.Info("workers_stuck", "group", g.Name, "stuck", stuck, "before", g.Stuck)
		}
		if maps.Equal(plan, g.Assignment) {
			continue
		}
		_, err := b.p.submit(ctx, &op{cmd: fsm.Assign{Group: g.Name, Assignment: plan}})
		if err != nil {
			b.log.Warn("writing placement failed", "group", g.Name, "error", err)
			continue
		}
		b.log.Info("placement_changed", "group", g.Name, "keys", len(g.Keys), "owned", len(plan),
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
func (b *balancer) planGroup(g *fsm.Group, workers []Member) (stuck []string, plan map[string]string, ncands int) {
	stuck = b.stuck.observe(g, b.machine.Get, b.machine.Control)
	var cands []candidate
	seen := make(map[string]bool)
	healthy := false
	for _, w := range workers {
		// Two processes announcing one id count once: they share the
		// id's keys, and their leases decide which of them works.
		if w.Serves(g.Name) && !w.Meta.Draining && !b.machine.Drained(w.Meta.ID) && !seen[w.Meta.ID] &&
			(b.admit == nil || b.admit(w.Meta.ID, g.Name)) {
			seen[w.Meta.ID] = true
			cands = append(cands, candidate{id: w.Meta.ID, capacity: w.Meta.Capacity})
			healthy = healthy || !slices.Contains(stuck, w.Meta.ID)
		}
	}
	if !healthy {
		return stuck, place(g.Keys, cands, g.MaxPerWorker, g.Assignment, b.machine.Control), len(cands)
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
	return stuck, place(g.Keys, kept, g.MaxPerWorker, prev, b.machine.Control), len(kept)
}

// keepHeld returns the previous plan of g without the keys targeted at a
// stuck worker that it does not hold (they go to the next workers in
// rendezvous order), and how many keys each stuck worker holds among those
// targeted at it.
func (b *balancer) keepHeld(g *fsm.Group, stuck []string) (map[string]string, map[string]int) {
	if len(stuck) == 0 {
		return g.Assignment, nil
	}
	prev := make(map[string]string, len(g.Assignment))
	held := make(map[string]int)
	for k, w := range g.Assignment {
		if slices.Contains(stuck, w) {
			l := b.machine.Get(k)
			if l == nil || !l.Held || !holds(l.Holder, w) {
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
func (b *balancer) stuckChanged() bool {
	groups, _ := b.machine.Groups()
	changed := false
	for _, g := range groups {
		if !slices.Equal(b.stuck.observe(g, b.machine.Get, b.machine.Control), g.Stuck) {
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
