package placement

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/cluster/internal/membership"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness"
)

// newWarmWorld is a stuckWorld whose balancer writes through the world
// (rebalance), with a holding all of 8 keys and b, which prepares for up
// to a minute, just joined.
func newWarmWorld(t *testing.T) *stuckWorld {
	w := newStuckWorld(t, partitionKeys(8), "a")
	w.b.cfg.Submit = func(_ context.Context, c fsm.Command) error {
		if w.apply(c).Code == fsm.CASFailed {
			return ErrPlanRefused
		}
		return nil
	}
	w.b.cfg.Workers = func() []membership.Member { return w.workers }
	w.b.cfg.Logger = hclog.NewNullLogger()
	w.step()
	w.take()
	w.workers = append(w.workers, membership.Member{Meta: membership.MemberMeta{ID: "b", Groups: []string{"g"}, PrepareMS: 60_000}})
	return w
}

// A key that moves to a worker that prepares stays with its holder while
// the new worker prepares it: the new worker's word (Prepared) moves it at
// once, the others move when the prepare time has passed; a pass with
// nothing new writes nothing, and a key prepared never moves back.
func TestWarmHandOffPreparesBeforeItMoves(t *testing.T) {
	w := newWarmWorld(t)
	ctx := context.Background()
	w.b.rebalance(ctx)
	g := w.m.Group("g")
	if got := harness.OwnedBy(g.Assignment, "a"); len(got) != 8 {
		t.Fatalf("a targeted at %d keys while b prepares, want all 8", len(got))
	}
	prepared := harness.OwnedBy(g.Prepare, "b")
	if len(prepared) != 4 {
		t.Fatalf("b prepares %v, want 4 keys", g.Prepare)
	}
	index := w.index
	w.b.rebalance(ctx)
	if w.index != index {
		t.Fatalf("a pass with nothing new wrote %d entries", w.index-index)
	}

	w.apply(fsm.Prepared{Group: "g", Worker: "b", Keys: prepared[:1]})
	g = w.m.Group("g")
	if g.Assignment[prepared[0]] != "b" || len(g.Prepare) != 3 {
		t.Fatalf("after b said %s is prepared: target %q, prepares %v", prepared[0], g.Assignment[prepared[0]], g.Prepare)
	}
	index = w.index
	w.b.rebalance(ctx)
	if w.index != index {
		t.Fatalf("the pass after a prepared key arrived wrote %d entries", w.index-index)
	}

	w.clock.Advance(time.Minute - time.Millisecond)
	w.b.rebalance(ctx)
	if g := w.m.Group("g"); len(g.Prepare) != 3 || len(harness.OwnedBy(g.Assignment, "b")) != 1 {
		t.Fatalf("before the prepare time: prepares %v, b targeted at %v", g.Prepare, harness.OwnedBy(g.Assignment, "b"))
	}
	w.clock.Advance(time.Millisecond)
	w.b.rebalance(ctx)
	g = w.m.Group("g")
	if len(g.Prepare) != 0 || !slices.Equal(harness.OwnedBy(g.Assignment, "b"), prepared) {
		t.Fatalf("after the prepare time: prepares %v, b targeted at %v, want %v", g.Prepare, harness.OwnedBy(g.Assignment, "b"), prepared)
	}
}

// Only a live, running holder is waited for: the keys of a worker that
// announced its own shutdown (draining) move at once.
func TestWarmHandOffSkipsAHolderThatStops(t *testing.T) {
	w := newWarmWorld(t)
	w.workers[0].Meta.Draining = true
	w.b.rebalance(context.Background())
	g := w.m.Group("g")
	if len(g.Prepare) != 0 || len(harness.OwnedBy(g.Assignment, "b")) != 8 {
		t.Fatalf("a stopping: prepares %v, b targeted at %d keys, want none and 8", g.Prepare, len(harness.OwnedBy(g.Assignment, "b")))
	}
}

// The availability budget counts a key being prepared as moving: with
// MaxMoving 2, b prepares two keys at a time.
func TestWarmHandOffKeepsTheAvailabilityBudget(t *testing.T) {
	w := newWarmWorld(t)
	w.apply(fsm.GroupBalance{Name: "g", Balance: fsm.Balance{MaxMoving: 2}})
	w.b.rebalance(context.Background())
	g := w.m.Group("g")
	if len(g.Prepare) != 2 {
		t.Fatalf("prepares %v with a budget of 2", g.Prepare)
	}
	w.apply(fsm.Prepared{Group: "g", Worker: "b", Keys: harness.OwnedBy(g.Prepare, "b")})
	w.b.rebalance(context.Background())
	if g := w.m.Group("g"); len(g.Prepare) != 0 {
		t.Fatalf("prepares %v while two keys are on their way, want none", g.Prepare)
	}
	w.handBack()
	w.take()
	w.b.rebalance(context.Background())
	if g := w.m.Group("g"); len(g.Prepare) != 2 {
		t.Fatalf("prepares %v once the first two arrived, want the next two", g.Prepare)
	}
}

// A key being prepared was counted in the move budget when its prepare
// began: a later pass in the same interval, with the budget spent, keeps
// preparing it instead of calling the move off.
func TestWarmHandOffSpendsTheMoveBudgetOnce(t *testing.T) {
	w := newWarmWorld(t)
	w.apply(fsm.GroupBalance{Name: "g", Balance: fsm.Balance{ByLoad: true, Threshold: 1.2, MoveBudget: 1, MoveInterval: time.Hour}})
	w.clock.Advance(2 * time.Hour) // past a new leader's first interval
	w.b.rebalance(context.Background())
	first := w.m.Group("g").Prepare
	if len(first) != 1 {
		t.Fatalf("prepares %v with a move budget of 1", first)
	}
	for range 3 {
		w.b.rebalance(context.Background())
		if got := w.m.Group("g").Prepare; !maps.Equal(got, first) {
			t.Fatalf("prepares %v after another pass in the interval, want %v still", got, first)
		}
	}
}

// A worker's Prepared that lands between the balancer's read of the group
// and its write is not undone: the plan, made without it, is refused, and
// the next pass plans again from the new state.
func TestWarmHandOffKeepsAPreparedThatRacesThePlan(t *testing.T) {
	w := newWarmWorld(t)
	ctx := context.Background()
	w.b.rebalance(ctx)
	prepared := harness.OwnedBy(w.m.Group("g").Prepare, "b")
	if len(prepared) != 4 {
		t.Fatalf("b prepares %v, want 4 keys", prepared)
	}
	// A key joins: the next pass writes a plan, and b reports its first
	// key prepared just before that plan is applied.
	w.apply(fsm.GroupKeys{Name: "g", Add: []string{"extra"}})
	submit := w.b.cfg.Submit
	w.b.cfg.Submit = func(ctx context.Context, c fsm.Command) error {
		w.apply(fsm.Prepared{Group: "g", Worker: "b", Keys: prepared[:1]})
		return submit(ctx, c)
	}
	w.b.rebalance(ctx)
	g := w.m.Group("g")
	if g.Assignment[prepared[0]] != "b" || len(g.Prepare) != 3 {
		t.Fatalf("after a plan raced b's report: %s targeted at %q, prepares %v; want b and 3", prepared[0], g.Assignment[prepared[0]], g.Prepare)
	}
	if g.Assignment["extra"] != "" {
		t.Fatalf("the raced plan was applied: extra targeted at %q", g.Assignment["extra"])
	}
	w.b.cfg.Submit = submit
	w.b.rebalance(ctx)
	g = w.m.Group("g")
	if g.Assignment[prepared[0]] != "b" || len(g.Prepare) != 3 || g.Assignment["extra"] == "" {
		t.Errorf("the next pass: %s targeted at %q, prepares %v, extra at %q", prepared[0], g.Assignment[prepared[0]], g.Prepare, g.Assignment["extra"])
	}
}
