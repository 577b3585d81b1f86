package placement

import (
	"context"
	"maps"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/membership"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness"
)

// runWorld runs a Balancer over a state machine on a fake clock.
type runWorld struct {
	t       *testing.T
	m       *fsm.Machine
	clock   *fakeClock
	joined  chan struct{}
	mu      sync.Mutex
	index   uint64
	workers []membership.Member
}

func (w *runWorld) submit(_ context.Context, c fsm.Command) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.index++
	w.m.Apply(&raft.Log{Index: w.index, Term: 1, Type: raft.LogCommand, Data: fsm.Encode(c)})
	return nil
}

func (w *runWorld) live() []membership.Member {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]membership.Member(nil), w.workers...)
}

// run runs b until the test ends.
func (w *runWorld) run(b *Balancer) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Run(ctx)
	}()
	w.t.Cleanup(func() {
		cancel()
		<-done
	})
}

// waitTimers waits until the balancer armed n timers: it is waiting on
// the clock.
func (w *runWorld) waitTimers(n int) {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for w.clock.Timers() != n {
		if time.Now().After(deadline) {
			w.t.Fatalf("%d timers armed, want %d", w.clock.Timers(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// eventually polls cond until it holds, for at most ten seconds.
func (w *runWorld) eventually(what string, cond func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			w.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// The balancer keeps time on its clock: it writes no plan before the
// settle time has passed on it, and a worker that joins gets keys once
// the debounce has passed.
func TestBalancerRunsOnItsClock(t *testing.T) {
	w := &runWorld{t: t, m: fsm.New(), clock: newFakeClock(), joined: make(chan struct{}, 1),
		workers: []membership.Member{{Meta: membership.MemberMeta{ID: "a", Groups: []string{"g"}}}}}
	if err := w.submit(context.Background(), fsm.GroupDefine{Name: "g", Keys: partitionKeys(8)}); err != nil {
		t.Fatal(err)
	}
	b := NewBalancer(BalancerConfig{State: w.m, Submit: w.submit, Workers: w.live, WorkersChanged: w.joined,
		Logger: hclog.NewNullLogger(), Clock: w.clock, Debounce: time.Second, Settle: 3 * time.Second,
		Stuck: NewTracker(w.clock, time.Minute), Check: time.Hour})
	w.run(b)

	w.waitTimers(1) // settle
	w.clock.Advance(3*time.Second - time.Millisecond)
	if got := len(w.m.Group("g").Assignment); got != 0 {
		t.Fatalf("%d keys planned before the settle time, want 0", got)
	}
	w.clock.Advance(time.Millisecond)
	w.eventually("a targeted at all 8 keys after the settle time", func() bool {
		return len(harness.OwnedBy(w.m.Group("g").Assignment, "a")) == 8
	})
	w.waitTimers(2) // the periodic check and the stuck check

	w.mu.Lock()
	w.workers = append(w.workers, membership.Member{Meta: membership.MemberMeta{ID: "b", Groups: []string{"g"}}})
	w.mu.Unlock()
	w.joined <- struct{}{}
	w.waitTimers(3) // debounce
	w.clock.Advance(time.Second)
	w.eventually("b targeted at 4 keys after the debounce", func() bool {
		return len(harness.OwnedBy(w.m.Group("g").Assignment, "b")) == 4
	})
}

// A group balanced by load: a new leader moves nothing for balance in its
// first move interval; then at most the budget per interval, from the
// overloaded worker, until every worker is within the imbalance; then
// nothing moves.
func TestBalancerMovesByLoadWithinItsBudget(t *testing.T) {
	clock := newFakeClock()
	w := &runWorld{t: t, m: fsm.New(), clock: clock}
	for _, id := range []string{"a", "b", "c", "d"} {
		w.workers = append(w.workers, membership.Member{Meta: membership.MemberMeta{ID: id, Groups: []string{"g"}}})
	}
	keys := partitionKeys(64)
	loads := NewLoads(clock, 30*time.Second)
	plan := map[string]string{}
	for i, k := range keys {
		load := 1.0
		if i < 8 {
			load = 10 // a's eight heavy keys: a carries 88 of 136
		}
		loads.Report("h", []KeyLoad{{k, load}}, nil)
		plan[k] = []string{"a", "b", "c", "d"}[max(0, i-8)/14%4]
		if i < 16 {
			plan[k] = "a"
		}
	}
	ctx := context.Background()
	for _, c := range []fsm.Command{
		fsm.GroupDefine{Name: "g", Keys: keys},
		fsm.Assign{Group: "g", Assignment: plan},
		fsm.GroupBalance{Name: "g", Balance: fsm.Balance{ByLoad: true, Threshold: 1.2, MoveBudget: 4, MoveInterval: 30 * time.Second}},
	} {
		if err := w.submit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	b := NewBalancer(BalancerConfig{State: w.m, Submit: w.submit, Workers: w.live, Logger: hclog.NewNullLogger(), Clock: clock,
		Stuck: NewTracker(clock, time.Minute), Check: time.Hour, Loads: loads})
	b.start = clock.Now()
	rel := func() (lo, hi float64) {
		per := map[string]float64{}
		for k, id := range w.m.Group("g").Assignment {
			x, _ := loads.Key(k)
			per[id] += x
		}
		lo, hi = 10, 0
		for _, id := range []string{"a", "b", "c", "d"} {
			r := per[id] / (136.0 / 4)
			lo, hi = min(lo, r), max(hi, r)
		}
		return lo, hi
	}
	b.rebalance(ctx)
	if moved := movedKeys(plan, w.m.Group("g").Assignment); moved != 0 {
		t.Fatalf("a new leader moved %d keys in its first interval, want 0", moved)
	}
	for round := 0; ; round++ {
		if round == 20 {
			t.Fatal("not balanced after 20 intervals")
		}
		clock.Advance(30 * time.Second)
		before := w.m.Group("g").Assignment
		b.rebalance(ctx)
		clock.Advance(10 * time.Second) // the same interval: its budget is spent
		b.rebalance(ctx)
		after := w.m.Group("g").Assignment
		moved := movedKeys(before, after)
		if moved > 4 {
			t.Fatalf("interval %d moved %d keys, the budget is 4", round, moved)
		}
		for k, id := range after {
			if before[k] != id && before[k] != "a" {
				t.Errorf("interval %d moved %s from %s, which is not overloaded", round, k, before[k])
			}
		}
		if lo, hi := rel(); hi <= 1.2 && lo >= 1/1.2 {
			clock.Advance(30 * time.Second)
			b.rebalance(ctx)
			if again := movedKeys(after, w.m.Group("g").Assignment); again != 0 {
				t.Fatalf("balanced (relative loads %.2f to %.2f), then %d keys moved again", lo, hi, again)
			}
			t.Logf("balanced after %d intervals: relative loads %.2f to %.2f", round+1, lo, hi)
			return
		}
		if moved == 0 {
			lo, hi := rel()
			t.Fatalf("interval %d moved nothing, relative loads %.2f to %.2f", round, lo, hi)
		}
	}
}

// The load of a key as the balancer weighs it: the operator's weight
// first, then the average of its reports, then the mean of those known.
func TestBalancerWeighsOperatorThenReportsThenMean(t *testing.T) {
	clock := newFakeClock()
	loads := NewLoads(clock, time.Minute)
	loads.Report("h", []KeyLoad{{"k1", 4}, {"k2", 2}, {"k3", 0}}, nil)
	b := NewBalancer(BalancerConfig{Clock: clock, Loads: loads})
	g := &fsm.Group{Name: "g", Keys: []string{"k1", "k2", "k3", "k4"},
		Balance: &fsm.Balance{ByLoad: true, Weights: map[string]float64{"k1": 9}}}
	weight := b.weights(g)
	for k, want := range map[string]float64{"k1": 9, "k2": 2, "k3": 11.0 / 3 * 1e-6, "k4": 11.0 / 3} {
		if got := weight(k); math.Abs(got-want) > want*1e-12 {
			t.Errorf("weight(%s) = %v, want %v", k, got, want)
		}
	}
}

// The relative loads the metrics show are those the balancer keeps within
// the imbalance: each worker's planned load over its share, in proportion
// to its load capacity; also for a group placed by count whose keys report
// loads, and none for one whose keys report none.
func TestRelativeLoadsOfThePlan(t *testing.T) {
	loads := NewLoads(newFakeClock(), time.Minute)
	loads.Report("h", []KeyLoad{{"a", 6}, {"b", 2}, {"c", 4}}, nil)
	g := &fsm.Group{Name: "g", Keys: []string{"a", "b", "c"}, Assignment: map[string]string{"a": "w1", "b": "w1", "c": "w2"},
		Balance: &fsm.Balance{ByLoad: true, Threshold: 1.2}}
	workers := []membership.Member{
		{Meta: membership.MemberMeta{ID: "w1", Groups: []string{"g"}, LoadCapacity: 300}},
		{Meta: membership.MemberMeta{ID: "w2", Groups: []string{"g"}, LoadCapacity: 100}},
		{Meta: membership.MemberMeta{ID: "w3", Groups: []string{"g"}, LoadCapacity: 100}}, // drained
	}
	drained := func(id string) bool { return id == "w3" }
	control := func(string) fsm.KeyControl { return fsm.KeyControl{} }
	got := RelativeLoads(g, workers, drained, nil, control, loads)
	// Shares of 12: w1 9, w2 3.
	want := map[string]float64{"w1": 8.0 / 9, "w2": 4.0 / 3}
	if !maps.EqualFunc(got, want, func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }) {
		t.Errorf("RelativeLoads = %v, want %v", got, want)
	}
	g.Balance = nil
	if got := RelativeLoads(g, workers, drained, nil, control, loads); !maps.EqualFunc(got, want, func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }) {
		t.Errorf("RelativeLoads of a group by count whose keys report loads = %v, want %v", got, want)
	}
	g.Keys = []string{"x", "y"}
	if got := RelativeLoads(g, workers, drained, nil, control, loads); got != nil {
		t.Errorf("RelativeLoads of a group by count without reports = %v, want nil", got)
	}
}

// A load capacity from gossip is a hint: one outside the rule of loads,
// or too small to divide by, counts as none.
func TestLoadCapacityFromGossipIsAHint(t *testing.T) {
	for in, want := range map[float64]float64{100: 100, 0: 0, -5: 0, 1e308: 0, math.Inf(1): 0, 5e-324: 0, 1e-3: 1e-3} {
		if got := loadCapacity(in); got != want {
			t.Errorf("loadCapacity(%v) = %v, want %v", in, got, want)
		}
	}
}

// The balancer forgets old load reports at every pass, also while no group
// exists (any holder may report loads).
func TestBalancerSweepsLoadsWithoutGroups(t *testing.T) {
	clock := newFakeClock()
	loads := NewLoads(clock, time.Second)
	loads.Report("h", []KeyLoad{{"k", 1}}, nil)
	b := NewBalancer(BalancerConfig{State: fsm.New(), Clock: clock, Stuck: NewTracker(clock, time.Minute), Loads: loads})
	clock.Advance(11 * time.Second)
	b.rebalance(context.Background())
	if _, ok := loads.Key("k"); ok {
		t.Error("a load not reported for 11 half-lives is kept after a pass without groups")
	}
}

// Workers that announce themselves in the replicated state (presence
// leases) are planned for at the next check once WorkersIndex moves,
// without waiting for the periodic pass.
func TestBalancerPlansForWorkersIndexChanges(t *testing.T) {
	w := &runWorld{t: t, m: fsm.New(), clock: newFakeClock(), joined: make(chan struct{}, 1),
		workers: []membership.Member{{Meta: membership.MemberMeta{ID: "a", Groups: []string{"g"}}}}}
	if err := w.submit(context.Background(), fsm.GroupDefine{Name: "g", Keys: partitionKeys(8)}); err != nil {
		t.Fatal(err)
	}
	var index atomic.Uint64
	b := NewBalancer(BalancerConfig{State: w.m, Submit: w.submit, Workers: w.live, WorkersChanged: w.joined,
		WorkersIndex: index.Load, Logger: hclog.NewNullLogger(), Clock: w.clock, Debounce: time.Second,
		Settle: time.Second, Stuck: NewTracker(w.clock, time.Minute), Check: time.Second})
	w.run(b)
	w.waitTimers(1) // settle
	w.clock.Advance(time.Second)
	w.eventually("a targeted at all 8 keys", func() bool { return len(harness.OwnedBy(w.m.Group("g").Assignment, "a")) == 8 })
	w.waitTimers(2) // the periodic pass and the check
	w.mu.Lock()
	w.workers = append(w.workers, membership.Member{Meta: membership.MemberMeta{ID: "b", Groups: []string{"g"}}})
	w.mu.Unlock()
	index.Add(1)                 // no gossip signal: the state says so
	w.clock.Advance(time.Second) // the check
	w.waitTimers(3)              // the debounce
	w.clock.Advance(time.Second)
	w.eventually("b targeted at 4 keys within a check and a debounce", func() bool {
		return len(harness.OwnedBy(w.m.Group("g").Assignment, "b")) == 4
	})
}
