package fsm

import (
	"testing"
	"time"
)

// TestChanged checks the signal that blocking queries wait on: closed by an
// entry that changes a lease, and only by such an entry.
func TestChanged(t *testing.T) {
	tests := []struct {
		name  string
		setup []Command
		cmd   Command
		want  bool
	}{
		{name: "granted", cmd: acquire("a", "w1"), want: true},
		{name: "kept", setup: []Command{acquire("a", "w1")}, cmd: acquire("a", "w1"), want: true},
		{name: "released", setup: []Command{acquire("a", "w1")}, cmd: Release{Key: "a", Holder: "w1", Token: 1}, want: true},
		{name: "expired", setup: []Command{acquire("a", "w1")}, cmd: Expire{Key: "a", Token: 1, Term: 1}, want: true},
		{name: "revoked", setup: []Command{acquire("a", "w1")}, cmd: Revoke{Key: "a"}, want: true},
		{name: "held by another", setup: []Command{acquire("a", "w1")}, cmd: acquire("a", "w2"), want: false},
		{name: "release not held", setup: []Command{acquire("a", "w1")}, cmd: Release{Key: "a", Holder: "w2", Token: 1}, want: false},
		{name: "stale expire", setup: []Command{acquire("a", "w1"), LeaderEstablished{Term: 2}}, cmd: Expire{Key: "a", Token: 1, Term: 1}, want: false},
		{name: "revoke not found", cmd: Revoke{Key: "a"}, want: false},
		{name: "leader established", cmd: LeaderEstablished{Term: 3}, want: false},
		{name: "batch with one change", setup: []Command{acquire("a", "w1")}, cmd: Batch{Commands: []Command{acquire("a", "w2"), acquire("b", "w2")}}, want: true},
		{name: "batch without a change", setup: []Command{acquire("a", "w1")}, cmd: Batch{Commands: []Command{acquire("a", "w2"), Revoke{Key: "b"}}}, want: false},

		// Placement changes wake blocking queries too.
		{name: "group created", cmd: GroupPut{Name: "g", Keys: []string{"a"}}, want: true},
		{name: "group replaced", setup: []Command{GroupPut{Name: "g", Keys: []string{"a"}}}, cmd: GroupPut{Name: "g", Keys: []string{"b"}}, want: true},
		{name: "group deleted", setup: []Command{GroupPut{Name: "g"}}, cmd: GroupDelete{Name: "g"}, want: true},
		{name: "group keys", setup: []Command{GroupPut{Name: "g"}}, cmd: GroupKeys{Name: "g", Add: []string{"a"}}, want: true},
		{name: "assign", setup: []Command{GroupPut{Name: "g", Keys: []string{"a"}}}, cmd: Assign{Group: "g", Assignment: map[string]string{"a": "w1"}}, want: true},
		{name: "key disabled", cmd: SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}}, want: true},
		{name: "holder prohibited", cmd: SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w1"}}}, want: true},
		{name: "key control cleared", setup: []Command{SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}}}, cmd: SetKeyControl{Key: "a"}, want: true},
		{name: "worker drained", cmd: WorkerDrain{Worker: "w1", Draining: true}, want: true},
		{name: "worker undrained", setup: []Command{WorkerDrain{Worker: "w1", Draining: true}}, cmd: WorkerDrain{Worker: "w1"}, want: true},
		{name: "batch with one placement change", cmd: Batch{Commands: []Command{GroupDelete{Name: "g"}, WorkerDrain{Worker: "w1", Draining: true}}}, want: true},
		{name: "delete of a missing group", cmd: GroupDelete{Name: "g"}, want: false},
		{name: "keys of a missing group", cmd: GroupKeys{Name: "g", Add: []string{"a"}}, want: false},
		{name: "assign of a missing group", cmd: Assign{Group: "g", Assignment: map[string]string{"a": "w1"}}, want: false},
		{name: "group max", setup: []Command{GroupPut{Name: "g", Keys: []string{"a"}}}, cmd: GroupMax{Name: "g", MaxPerWorker: 3}, want: true},
		{name: "group max of a missing group", cmd: GroupMax{Name: "g", MaxPerWorker: 3}, want: false},
		{name: "acquire of a disabled key", setup: []Command{SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}}}, cmd: acquire("a", "w1"), want: false},
		{name: "acquire by a prohibited holder", setup: []Command{SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w1"}}}}, cmd: acquire("a", "w1"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			n.all(tt.setup...)
			ch := n.m.Changed()

			n.applyRaw(Encode(tt.cmd))

			if got := isClosed(ch); got != tt.want {
				t.Errorf("Changed() closed = %t, want %t", got, tt.want)
			}
			if isClosed(n.m.Changed()) {
				t.Error("the Changed() channel after the entry is already closed")
			}
		})
	}
}

// TestChangedWakesWaiter is the blocking query's view: a goroutine waiting
// on Changed() wakes up when a lease changes.
func TestChangedWakesWaiter(t *testing.T) {
	n := newNode(t)
	n.one(acquire("a", "w1"))
	ch := n.m.Changed()
	woke := make(chan uint64)
	go func() {
		<-ch
		woke <- n.m.Get("a").ModifyIndex
	}()

	n.one(acquire("a", "w2")) // held: no change, no wake-up
	select {
	case <-woke:
		t.Fatal("waiter woke up on an entry that changed nothing")
	default:
	}
	n.one(Release{Key: "a", Holder: "w1", Token: 1})

	select {
	case idx := <-woke:
		if idx != 3 {
			t.Errorf("waiter read modify index %d, want 3", idx)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not woken within 5s of a release")
	}
}
