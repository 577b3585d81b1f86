package cluster

import (
	"testing"
	"time"
)

// A read waits until the state machine has applied the commit index its
// round read; withdrawn waits leave nothing behind.
func TestAppliedIndexWaits(t *testing.T) {
	var a appliedIndex
	a.set(5)
	done, cancel := a.wait(5)
	select {
	case <-done:
	default:
		t.Fatal("a wait for an index already applied blocked")
	}
	cancel()
	seven, cancel7 := a.wait(7)
	defer cancel7()
	nine, cancel9 := a.wait(9)
	a.set(6)
	select {
	case <-seven:
		t.Fatal("the wait for 7 ended at 6")
	case <-time.After(10 * time.Millisecond):
	}
	a.set(8)
	select {
	case <-seven:
	case <-time.After(time.Second):
		t.Fatal("the wait for 7 did not end at 8")
	}
	select {
	case <-nine:
		t.Fatal("the wait for 9 ended at 8")
	default:
	}
	cancel9()
	a.set(3) // the index never goes back
	if got := a.index.Load(); got != 8 {
		t.Fatalf("index %d after set(3), want 8", got)
	}
	if a.waiting.Load() != 0 || len(a.waiters) != 0 {
		t.Fatalf("%d waiters left (%d counted)", len(a.waiters), a.waiting.Load())
	}
}
