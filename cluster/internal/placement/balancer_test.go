package placement

import (
	"context"
	"sync"
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
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})

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
