package placement

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/membership"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness"
)

// stuckWorld is a leader's view for the balancer's planning step: a state
// machine, a fake clock and the live workers of one group "g".
type stuckWorld struct {
	t       *testing.T
	m       *fsm.Machine
	clock   *fakeClock
	b       *Balancer
	index   uint64
	workers []membership.Member
}

const testGrace = 10 * time.Second

func newStuckWorld(t *testing.T, keys []string, workers ...string) *stuckWorld {
	t.Helper()
	w := &stuckWorld{t: t, m: fsm.New(), clock: newFakeClock()}
	w.b = NewBalancer(BalancerConfig{State: w.m, Clock: w.clock, Stuck: NewTracker(w.clock, time.Minute)})
	w.apply(fsm.GroupDefine{Name: "g", Keys: keys, StuckGrace: testGrace})
	for _, id := range workers {
		w.workers = append(w.workers, membership.Member{Meta: membership.MemberMeta{ID: id, Groups: []string{"g"}}})
	}
	return w
}

func (w *stuckWorld) apply(c fsm.Command) fsm.Result {
	w.t.Helper()
	w.index++
	r, ok := w.m.Apply(&raft.Log{Index: w.index, Term: 1, Type: raft.LogCommand, Data: fsm.Encode(c)}).(fsm.Result)
	if !ok {
		w.t.Fatalf("Apply(%T) did not return a Result", c)
	}
	return r
}

// step is one pass of the balancer over "g": it records the stuck set and
// the plan as rebalance would, and returns them.
func (w *stuckWorld) step() ([]string, map[string]string) {
	w.t.Helper()
	g := w.m.Group("g")
	stuck, plan, _, _ := w.b.planGroup(g, w.workers)
	if !slices.Equal(stuck, g.Stuck) {
		w.apply(fsm.MarkStuck{Group: "g", Workers: stuck})
	}
	if !maps.Equal(plan, g.Assignment) {
		w.apply(fsm.Assign{Group: "g", Assignment: plan})
	}
	// The balancer's next check sees the new plan.
	w.b.cfg.Stuck.Observe(w.m.Group("g"), w.m.Get, w.m.Control)
	return stuck, plan
}

// handBack releases every key held by a worker that is no longer its
// target, as the client Worker does once its callback returns.
func (w *stuckWorld) handBack() {
	w.t.Helper()
	g := w.m.Group("g")
	for _, k := range g.Keys {
		if l := w.m.Get(k); l != nil && l.Held && !Holds(l.Holder, g.Assignment[k]) {
			w.apply(fsm.Release{Key: k, Holder: l.Holder, Token: l.Token})
		}
	}
}

// take makes every live worker but the ones in skip acquire the free keys
// targeted at it, as a healthy client Worker does.
func (w *stuckWorld) take(skip ...string) {
	w.t.Helper()
	for k, id := range w.m.Group("g").Assignment {
		if slices.Contains(skip, id) {
			continue
		}
		if l := w.m.Get(k); l == nil || !l.Held {
			if r := w.apply(fsm.Acquire{Key: k, Holder: id + "#1a2b", TTL: time.Second}); r.Code != fsm.Granted {
				w.t.Fatalf("acquire %s by %s = %v", k, id, r.Code)
			}
		}
	}
}

// A worker that never takes its targets is marked stuck once one of them
// has been free for the grace, not before; its targets go to the others,
// which take them, so every key ends owned by a live worker.
func TestStuckWorkerLosesItsTargetsAfterTheGrace(t *testing.T) {
	w := newStuckWorld(t, partitionKeys(12), "a", "b", "c")
	_, plan := w.step()
	mine := harness.OwnedBy(plan, "c")
	if len(mine) == 0 {
		t.Fatalf("c was given no key: %v", plan)
	}
	w.take("c")
	w.clock.Advance(testGrace - time.Millisecond)
	if stuck, _ := w.step(); len(stuck) != 0 {
		t.Fatalf("stuck = %v before the grace passed, want none", stuck)
	}
	w.clock.Advance(time.Millisecond)
	stuck, plan := w.step()
	if !slices.Equal(stuck, []string{"c"}) {
		t.Fatalf("stuck = %v after the grace, want [c]", stuck)
	}
	if got := w.m.Group("g").Stuck; !slices.Equal(got, []string{"c"}) {
		t.Errorf("group view Stuck = %v, want [c]", got)
	}
	if got := harness.OwnedBy(plan, "c"); len(got) != 0 {
		t.Errorf("stuck worker c still targeted at %v", got)
	}
	// c's keys are spread over the others, evenly.
	if a, b := len(harness.OwnedBy(plan, "a")), len(harness.OwnedBy(plan, "b")); a != 6 || b != 6 {
		t.Errorf("a and b are targeted at %d and %d keys, want 6 each", a, b)
	}
	w.take("c")
	for _, k := range partitionKeys(12) {
		if l := w.m.Get(k); l == nil || !l.Held || Holds(l.Holder, "c") {
			t.Errorf("%s is not owned by a live worker: %+v", k, l)
		}
	}
}

// A key held by someone other than its target (an owner handing it back)
// does not count against the target: the holder decides when it frees.
func TestStuckCountsOnlyWhileTheKeyIsFree(t *testing.T) {
	w := newStuckWorld(t, []string{"k"}, "a")
	w.apply(fsm.Acquire{Key: "k", Holder: "old#9", TTL: time.Second})
	w.step()
	w.clock.Advance(3 * testGrace)
	if stuck, _ := w.step(); len(stuck) != 0 {
		t.Fatalf("stuck = %v while another holder had the key", stuck)
	}
	w.apply(fsm.Release{Key: "k", Holder: "old#9", Token: w.m.Get("k").Token})
	w.step()
	w.clock.Advance(testGrace - time.Millisecond)
	if stuck, _ := w.step(); len(stuck) != 0 {
		t.Fatalf("stuck = %v before the grace since the key freed", stuck)
	}
	w.clock.Advance(time.Millisecond)
	if stuck, _ := w.step(); !slices.Equal(stuck, []string{"a"}) {
		t.Fatalf("stuck = %v a grace after the key freed, want [a]", stuck)
	}
}

// A stuck worker keeps the keys it holds and gets no new ones; after its
// quarantine it gets keys again, and if it again does not take them its
// next quarantine is twice as long, so it cannot flap at the rate of the
// grace. A worker that then takes its keys is forgotten.
func TestStuckWorkerQuarantineDoublesAndIsForgotten(t *testing.T) {
	keys := partitionKeys(12)
	w := newStuckWorld(t, keys, "a", "b")
	_, plan := w.step()
	bKeys := harness.OwnedBy(plan, "b")
	// b takes one of its keys only.
	if r := w.apply(fsm.Acquire{Key: bKeys[0], Holder: "b#1", TTL: time.Second}); r.Code != fsm.Granted {
		t.Fatalf("acquire = %v", r.Code)
	}
	w.take("b")
	w.clock.Advance(testGrace)
	stuck, plan := w.step()
	if !slices.Equal(stuck, []string{"b"}) {
		t.Fatalf("stuck = %v, want [b]", stuck)
	}
	if got := harness.OwnedBy(plan, "b"); !slices.Equal(got, bKeys[:1]) {
		t.Fatalf("stuck b targeted at %v, want only the key it holds %v", got, bKeys[:1])
	}
	w.take("b")

	// Within the quarantine b gets nothing new, even when a leaves.
	w.clock.Advance(testGrace - time.Millisecond)
	if stuck, _ := w.step(); !slices.Equal(stuck, []string{"b"}) {
		t.Fatalf("stuck = %v within the quarantine, want [b]", stuck)
	}
	// Then it is let back and gets keys again.
	w.clock.Advance(time.Millisecond)
	stuck, plan = w.step()
	if len(stuck) != 0 || len(harness.OwnedBy(plan, "b")) <= 1 {
		t.Fatalf("after one grace: stuck = %v, b targeted at %v; want b let back with new keys", stuck, harness.OwnedBy(plan, "b"))
	}
	w.handBack()
	w.step()
	// It does not take them: stuck again, for two graces this time.
	w.clock.Advance(testGrace)
	if stuck, _ := w.step(); !slices.Equal(stuck, []string{"b"}) {
		t.Fatalf("stuck = %v after failing again, want [b]", stuck)
	}
	w.take("b")
	w.clock.Advance(2*testGrace - time.Millisecond)
	if stuck, _ := w.step(); !slices.Equal(stuck, []string{"b"}) {
		t.Fatalf("stuck = %v within the doubled quarantine, want [b]", stuck)
	}
	w.clock.Advance(time.Millisecond)
	if stuck, _ := w.step(); len(stuck) != 0 {
		t.Fatalf("stuck = %v after the doubled quarantine, want none", stuck)
	}
	// Now b works: it takes its keys and, after a while, its record is
	// forgotten, so a later stall costs it one grace again.
	w.take()
	w.clock.Advance(forgetAfter * 2 * testGrace)
	w.step()
	if _, ok := w.b.cfg.Stuck.groups["g"].workers["b"]; ok {
		t.Fatalf("b's strikes are still kept after it worked for %v", forgetAfter*2*testGrace)
	}
}

// A new leader counts from its promotion, and keeps the stuck marks of the
// previous leader for one grace.
func TestStuckMarksOfThePreviousLeader(t *testing.T) {
	w := newStuckWorld(t, partitionKeys(4), "a", "b")
	w.apply(fsm.MarkStuck{Group: "g", Workers: []string{"b"}})
	stuck, plan := w.step()
	if !slices.Equal(stuck, []string{"b"}) || len(harness.OwnedBy(plan, "b")) != 0 {
		t.Fatalf("stuck = %v, b targeted at %v; want the previous leader's mark kept", stuck, harness.OwnedBy(plan, "b"))
	}
	w.take()
	w.clock.Advance(testGrace)
	if stuck, plan := w.step(); len(stuck) != 0 || len(harness.OwnedBy(plan, "b")) == 0 {
		t.Fatalf("after one grace: stuck = %v, b targeted at %v; want b let back", stuck, harness.OwnedBy(plan, "b"))
	}
}

func TestGroupGrace(t *testing.T) {
	leases := map[string]*fsm.Lease{
		"a": {Key: "a", TTL: 3 * time.Second, Held: true},
		"b": {Key: "b", TTL: 7 * time.Second}, // free, last held with 7s
	}
	lease := func(k string) *fsm.Lease { return leases[k] }
	tests := []struct {
		name string
		g    *fsm.Group
		want time.Duration
	}{
		{"own setting", &fsm.Group{Keys: []string{"a", "b"}, StuckGrace: time.Minute}, time.Minute},
		{"twice the largest TTL", &fsm.Group{Keys: []string{"a", "b"}}, 14 * time.Second},
		{"no lease: the default", &fsm.Group{Keys: []string{"c"}}, 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := groupGrace(tt.g, lease, 20*time.Second); got != tt.want {
				t.Errorf("groupGrace = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHolds(t *testing.T) {
	for _, tt := range []struct {
		holder, worker string
		want           bool
	}{
		{"w1", "w1", true},
		{"w1#1a2b", "w1", true},
		{"w10#1a2b", "w1", false},
		{"w1#x#y", "w1", false},
		{"other", "w1", false},
	} {
		if got := Holds(tt.holder, tt.worker); got != tt.want {
			t.Errorf("Holds(%q, %q) = %t, want %t", tt.holder, tt.worker, got, tt.want)
		}
	}
}

// A stuck worker that holds nothing is no candidate; one that holds keys
// keeps exactly those.
func TestPlacementKeepOnlyWorker(t *testing.T) {
	keys := partitionKeys(30)
	workers := []candidate{{id: "a"}, {id: "b"}, {id: "c"}}
	prev := place(keys, workers, 0, nil, noControl)
	cKeys := harness.OwnedBy(prev, "c")
	kept := map[string]string{}
	for k, w := range prev {
		if w != "c" || k == cKeys[0] {
			kept[k] = w
		}
	}
	workers[2] = candidate{id: "c", capacity: 1, keepOnly: true}
	plan := place(keys, workers, 0, kept, noControl)
	if got := harness.OwnedBy(plan, "c"); !slices.Equal(got, cKeys[:1]) {
		t.Errorf("keep-only c targeted at %v, want %v", got, cKeys[:1])
	}
	if len(plan) != len(keys) {
		t.Errorf("%d of %d keys owned", len(plan), len(keys))
	}
	for k, w := range prev {
		if w != "c" && plan[k] != w {
			t.Errorf("%s moved from %s to %s; only c's keys should move", k, w, plan[k])
		}
	}
}

// When every worker of a group is stuck (a fault between the workers and
// the servers, say), nobody could take their keys: the plan keeps them, so
// the workers take their keys the moment they can, and are let back once
// they hold them after the quarantine.
func TestAllWorkersStuckKeepTheirTargets(t *testing.T) {
	keys := partitionKeys(6)
	w := newStuckWorld(t, keys, "a", "b")
	_, before := w.step()
	w.clock.Advance(testGrace)
	stuck, plan := w.step()
	if !slices.Equal(stuck, []string{"a", "b"}) {
		t.Fatalf("stuck = %v, want [a b]", stuck)
	}
	if !maps.Equal(plan, before) {
		t.Errorf("plan moved keys while every worker was stuck:\n got %v\nwant %v", plan, before)
	}
	w.take()
	w.clock.Advance(testGrace)
	if stuck, plan := w.step(); len(stuck) != 0 || !maps.Equal(plan, before) {
		t.Errorf("after the workers took their keys: stuck = %v, plan %v; want none stuck and the same plan", stuck, plan)
	}
}

// A stuck worker of a group that is deleted, the last one included, is no
// longer reported: nothing tracks a group that is gone.
func TestStuckMarksOfADeletedGroupAreForgotten(t *testing.T) {
	w := newStuckWorld(t, partitionKeys(12), "a", "b", "c")
	w.step()
	w.take("c")
	w.clock.Advance(testGrace)
	if stuck, _ := w.step(); len(stuck) != 1 {
		t.Fatalf("stuck = %v, want c", stuck)
	}
	w.apply(fsm.GroupDelete{Name: "g"})
	w.b.rebalance(context.Background())
	if _, stuck, _ := w.b.cfg.Stuck.Report(); len(stuck) != 0 {
		t.Errorf("after the only group was deleted: stuck %+v, want none", stuck)
	}
}

// A drain under an availability budget of 3: the drained worker's keys are
// retargeted 3 at a time, so at no point are more than 3 keys of the group
// unowned or on their way to a new owner, and all of them end on the
// other worker. Without the budget, all 6 would move at once.
func TestAvailabilityBudgetStagesADrain(t *testing.T) {
	w := newStuckWorld(t, partitionKeys(12), "a", "b")
	w.apply(fsm.GroupBalance{Name: "g", Balance: fsm.Balance{MaxMoving: 3}})
	w.step()
	w.take()
	if r := w.apply(fsm.WorkerDrain{Worker: "a", Draining: true}); r.Code != fsm.Done {
		t.Fatalf("drain a = %v", r.Code)
	}
	inFlight := func() int {
		g, n := w.m.Group("g"), 0
		for _, k := range g.Keys {
			if l := w.m.Get(k); l == nil || !l.Held || !Holds(l.Holder, g.Assignment[k]) {
				n++
			}
		}
		return n
	}
	for round := 0; ; round++ {
		if round == 5 {
			t.Fatal("the drain has not ended after 5 rounds")
		}
		g := w.m.Group("g")
		_, plan, _, moved := w.b.planGroup(g, w.workers)
		plan, _ = w.b.stage(g, plan, w.workers, moved)
		if !maps.Equal(plan, g.Assignment) {
			w.apply(fsm.Assign{Group: "g", Assignment: plan})
		}
		if n := inFlight(); n > 3 {
			t.Fatalf("round %d: %d keys retargeted at once, the budget is 3", round, n)
		} else if round < 2 && n != 3 {
			t.Fatalf("round %d: %d keys retargeted, want 3 (the budget)", round, n)
		}
		w.handBack()
		if n := inFlight(); n > 3 {
			t.Fatalf("round %d: %d keys unowned after the hand-backs, the budget is 3", round, n)
		}
		w.take("a")
		if held := harness.OwnedBy(w.m.Group("g").Assignment, "b"); len(held) == 12 && inFlight() == 0 {
			return
		}
	}
}
