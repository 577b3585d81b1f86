package fsm

import (
	"testing"
	"time"
)

// handOver applies a Handover of term 2 that names every lease given with
// its current record, each with left time left.
func handOver(n *node, left time.Duration, keys ...string) Result {
	n.t.Helper()
	h := Handover{Term: 2}
	for _, k := range keys {
		l := n.m.Get(k)
		h.Leases = append(h.Leases, HandedLease{Key: k, Token: l.Token, ModifyIndex: l.ModifyIndex, Left: left})
	}
	return n.one(h)
}

// TestHandedOverHoldsUntilALeaderEstablishes: the time a stopping leader
// handed over is the next leader's to use only while no leader has
// established itself after it, and only for the very record it named.
func TestHandedOverHoldsUntilALeaderEstablishes(t *testing.T) {
	n := newNode(t)
	n.all(LeaderEstablished{Term: 2}, acquire("a", "w1"), acquire("b", "w1"), acquire("c", "w1"), acquire("d", "w1"))
	tokA, tokB := n.m.Get("a").Token, n.m.Get("b").Token
	if r := handOver(n, 3*time.Second, "a", "b", "c", "d"); r.Code != Done {
		t.Fatalf("Handover = %v, want Done", r.Code)
	}
	// After it: b kept by its holder's repeated acquire (its deadline
	// restarted by a leader that may have answered it), c released and
	// acquired again (another token), d released.
	n.all(acquire("b", "w1"), Release{Key: "c", Holder: "w1", Token: n.m.Get("c").Token}, acquire("c", "w2"),
		Release{Key: "d", Holder: "w1", Token: n.m.Get("d").Token})

	pending := n.m.PendingHandover()
	if h, ok := pending["a"]; !ok || h.Left != 3*time.Second || !h.Names(n.m.Get("a")) {
		t.Errorf("handed over a = %+v, %t, names %v; want 3s for its record", h, ok, n.m.Get("a"))
	}
	other := *n.m.Get("a")
	other.Token = tokA + 100
	if pending["a"].Names(&other) {
		t.Error("the hand-over of a names a record under another token")
	}
	if h := pending["b"]; h.Token != tokB || h.Names(n.m.Get("b")) {
		t.Error("the hand-over of b names its record after its holder's acquire changed it")
	}
	if pending["c"].Names(n.m.Get("c")) {
		t.Error("the hand-over of c names a newer lease of the key")
	}
	if pending["d"].Names(n.m.Get("d")) {
		t.Error("the hand-over of d names a free key")
	}

	// A snapshot leaves it out: a follower that restores one restarts
	// every lease at a full TTL.
	restored := restoredFrom(t, persist(t, n.m))
	if p := restored.PendingHandover(); p != nil {
		t.Errorf("a restored state has a pending hand-over of %d leases", len(p))
	}

	// Once a leader establishes, it may have served renewals the Handover
	// does not know: forgotten, whatever the term.
	n.one(LeaderEstablished{Term: 2})
	if p := n.m.PendingHandover(); p != nil {
		t.Errorf("a hand-over of %d leases is pending after a LeaderEstablished", len(p))
	}
}

// TestHandoverOfAnOlderTermIsRefused: a Handover of a term older than the
// last established leader's is never used.
func TestHandoverOfAnOlderTermIsRefused(t *testing.T) {
	n := newNode(t)
	n.all(LeaderEstablished{Term: 3}, acquire("a", "w1"))
	l := n.m.Get("a")
	r := n.one(Handover{Term: 2, Leases: []HandedLease{{Key: "a", Token: l.Token, ModifyIndex: l.ModifyIndex, Left: time.Second}}})
	if r.Code != Refused {
		t.Errorf("Handover of term 2 after term 3 = %v, want Refused", r.Code)
	}
	if p := n.m.PendingHandover(); p != nil {
		t.Error("a refused Handover is pending")
	}
}

// TestHandoverDecodeRejectsCorruptCounts: a count of leases that the
// entry cannot hold, or a negative time, is malformed, not an allocation.
func TestHandoverDecodeRejectsCorruptCounts(t *testing.T) {
	huge := []byte{byte(TypeHandover), version1, 1, 0xff, 0xff, 0xff, 0x7f}
	if _, err := decode(huge, true, true); err == nil {
		t.Error("a Handover claiming 268 million leases decoded")
	}
	e := &encoder{buf: []byte{byte(TypeHandover), version1}}
	Handover{Term: 1, Leases: []HandedLease{{Key: "a", Token: 1, ModifyIndex: 1, Left: -time.Second}}}.encode(e)
	if _, err := decode(e.buf, true, true); err == nil {
		t.Error("a Handover with a negative time left decoded")
	}
}
