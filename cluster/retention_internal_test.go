package cluster

import (
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/clock/clocktest"
	"github.com/tenure-io/tenure/fsm"
)

// machineLog applies commands to a Machine as Raft would, one entry each.
type machineLog struct {
	m     *fsm.Machine
	index uint64
}

func (l *machineLog) apply(cmds ...fsm.Command) {
	for _, c := range cmds {
		l.index++
		l.m.Apply(&raft.Log{Index: l.index, Term: 1, Type: raft.LogCommand, Data: fsm.Encode(c)})
	}
}

// fakeClock is a manual clock that tests move by hand.
type fakeClock = clocktest.Fake

func newFakeClock() *fakeClock { return clocktest.NewFake() }

func forgetKeys(cmds []fsm.Forget) []string {
	var out []string
	for _, c := range cmds {
		out = append(out, c.Key)
	}
	return out
}

// A key free for the retention is due to be forgotten; one re-acquired,
// or freed again under a newer token, counts again; keys of groups stay.
func TestRetentionForgetsKeysFreeForTheRetention(t *testing.T) {
	const keep = time.Hour
	clock := newFakeClock()
	log := &machineLog{m: fsm.New()}
	a := func(key, holder string) fsm.Acquire { return fsm.Acquire{Key: key, Holder: holder, TTL: time.Minute} }
	log.apply(
		fsm.GroupPut{Name: "g", Keys: []string{"grouped"}},
		a("once", "w1"), fsm.Release{Key: "once", Holder: "w1", Token: 1},
		a("again", "w1"), fsm.Release{Key: "again", Holder: "w1", Token: 2},
		a("grouped", "w1"), fsm.Release{Key: "grouped", Holder: "w1", Token: 3},
		a("held", "w1"),
	)
	r := &sweeper{machine: log.m, clock: clock, keep: keep, seen: map[string]freeSince{}}
	if due := r.observe(clock.Now()); len(due) != 0 {
		t.Fatalf("due at promotion = %v, want none", forgetKeys(due))
	}
	clock.Advance(keep / 2)
	log.apply(a("again", "w2")) // re-acquired half-way
	if due := r.observe(clock.Now()); len(due) != 0 {
		t.Fatalf("due half-way = %v, want none", forgetKeys(due))
	}
	log.apply(fsm.Release{Key: "again", Holder: "w2", Token: 5})
	clock.Advance(keep/2 - time.Nanosecond)
	if due := r.observe(clock.Now()); len(due) != 0 {
		t.Fatalf("due just before the retention = %v, want none", forgetKeys(due))
	}
	clock.Advance(time.Nanosecond)
	due := r.observe(clock.Now())
	if want := []fsm.Forget{{Key: "once", Token: 1}}; !reflect.DeepEqual(due, want) {
		t.Fatalf("due at the retention = %v, want %v", due, want)
	}
	log.apply(due[0])
	if log.m.Get("once") != nil {
		t.Fatal("once is still recorded after its Forget")
	}
	// again was first seen free under its new token a nanosecond before
	// the retention of the others had passed.
	clock.Advance(keep - 2*time.Nanosecond)
	if due := r.observe(clock.Now()); len(due) != 0 {
		t.Fatalf("due before the second release's retention = %v, want none", forgetKeys(due))
	}
	clock.Advance(time.Nanosecond)
	if due := r.observe(clock.Now()); !reflect.DeepEqual(forgetKeys(due), []string{"again"}) {
		t.Fatalf("due a retention after the second release = %v, want [again]", forgetKeys(due))
	}
	// The token counter never goes back: a new grant of a forgotten key
	// takes a larger token than any it had.
	log.apply(a("once", "w3"))
	if got := log.m.Get("once"); got == nil || got.Token != 6 {
		t.Fatalf("grant of a forgotten key = %+v, want token 6", got)
	}
}

func TestRetentionBatchIsBounded(t *testing.T) {
	clock := newFakeClock()
	log := &machineLog{m: fsm.New()}
	for i := uint64(1); i <= maxForgetBatch+10; i++ {
		key := "k" + time.Duration(i).String()
		log.apply(fsm.Acquire{Key: key, Holder: "h", TTL: time.Minute}, fsm.Release{Key: key, Holder: "h", Token: i})
	}
	r := &sweeper{machine: log.m, clock: clock, keep: time.Minute, seen: map[string]freeSince{}}
	r.observe(clock.Now())
	clock.Advance(time.Minute)
	if due := r.observe(clock.Now()); len(due) != maxForgetBatch {
		t.Fatalf("due = %d keys, want the batch bound %d", len(due), maxForgetBatch)
	}
}

func TestSweepInterval(t *testing.T) {
	for _, tc := range []struct {
		name      string
		keep, set time.Duration
		want      time.Duration
	}{
		{"a tenth of the retention, at most a minute", 24 * time.Hour, 0, time.Minute},
		{"a tenth of the retention", 5 * time.Second, 0, 500 * time.Millisecond},
		{"at least 10ms", 50 * time.Millisecond, 0, 10 * time.Millisecond},
		{"as set", 24 * time.Hour, time.Second, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sweepInterval(tc.keep, tc.set); got != tc.want {
				t.Errorf("sweepInterval(%v, %v) = %v, want %v", tc.keep, tc.set, got, tc.want)
			}
		})
	}
}
