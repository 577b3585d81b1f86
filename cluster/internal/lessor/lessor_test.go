package lessor

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster/internal/clock/clocktest"
	"github.com/tenure-io/tenure/fsm"
)

// fakeClock is a manual clock that tests move by hand.
type fakeClock = clocktest.Fake

func newFakeClock() *fakeClock { return clocktest.NewFake() }

// grant is a lease that newPrimary grants: key under token for ttl.
type grant struct {
	key   string
	token uint64
	ttl   time.Duration
}

// newPrimary returns a manual clock and a lessor on it that has been
// promoted with no leases and has then granted grants, in order.
func newPrimary(grants ...grant) (*fakeClock, *Lessor) {
	clock := newFakeClock()
	l := New(clock)
	l.Promote(nil, nil)
	for _, g := range grants {
		l.Grant(g.key, g.token, g.ttl, 0)
	}
	return clock, l
}

func keys(exp []Expiry) []string {
	var out []string
	for _, e := range exp {
		out = append(out, e.Key)
	}
	return out
}

func TestLessorPromoteGivesFullTTL(t *testing.T) {
	clock := newFakeClock()
	l := New(clock)
	if got, _ := l.Renew("a", 1); got != RenewNotPrimary {
		t.Fatalf("renew on a secondary lessor = %v, want RenewNotPrimary", got)
	}
	l.Promote([]*fsm.Lease{
		{Key: "a", Token: 1, TTL: 10 * time.Second, Held: true},
		{Key: "b", Token: 2, TTL: 2 * time.Second, Held: true},
	}, nil)
	clock.Advance(2*time.Second - time.Nanosecond)
	if got := l.Expired(10); len(got) != 0 {
		t.Fatalf("expired before any TTL passed since promotion: %v", keys(got))
	}
	clock.Advance(time.Nanosecond)
	if got := keys(l.Expired(10)); len(got) != 1 || got[0] != "b" {
		t.Fatalf("expired = %v, want [b]", got)
	}
	if left, _, ok := l.Deadline("a", 1); !ok || left != 8*time.Second {
		t.Fatalf("deadline of a = %v %v, want 8s", left, ok)
	}
}

// A promoted lessor expires many leases of mixed TTLs in deadline order,
// and renewals and removals after promotion keep that order.
func TestLessorPromoteKeepsDeadlineOrder(t *testing.T) {
	clock := newFakeClock()
	l := New(clock)
	var held []*fsm.Lease
	for i := 0; i < 200; i++ {
		// TTLs of 1s to 7s, not in key order.
		held = append(held, &fsm.Lease{Key: fmt.Sprintf("k%03d", i), Token: uint64(i + 1), TTL: time.Duration(i*3%7+1) * time.Second, Held: true})
	}
	l.Promote(held, nil)
	// k000 (1s) is renewed to the end; k001 (4s) is removed.
	clock.Advance(500 * time.Millisecond)
	if got, _ := l.Renew("k000", 1); got != Renewed {
		t.Fatalf("renew k000 = %v, want Renewed", got)
	}
	l.Remove("k001", 2)
	want := map[string]time.Duration{}
	for _, h := range held {
		want[h.Key] = h.TTL
	}
	want["k000"] = 1500 * time.Millisecond
	delete(want, "k001")
	var last time.Duration
	for step := time.Duration(0); step <= 8*time.Second; step += 250 * time.Millisecond {
		if step > 0 {
			clock.Advance(250 * time.Millisecond)
		}
		now := 500*time.Millisecond + step
		for _, key := range keys(l.Expired(1000)) {
			d := want[key]
			if d == 0 {
				t.Fatalf("%s expired, but it was removed or already expired", key)
			}
			if d > now || d < last {
				t.Fatalf("%s (deadline %v) expired at %v after a deadline of %v", key, d, now, last)
			}
			last = d
			delete(want, key)
		}
	}
	if len(want) != 0 {
		t.Fatalf("%d leases never expired", len(want))
	}
}

func TestLessorRenewal(t *testing.T) {
	tests := []struct {
		name    string
		advance time.Duration
		token   uint64
		want    RenewOutcome
	}{
		{"before the deadline", 9 * time.Second, 1, Renewed},
		{"at the deadline", 10 * time.Second, 1, RenewExpired},
		{"after the deadline", 11 * time.Second, 1, RenewExpired},
		{"another token", time.Second, 2, RenewUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock, l := newPrimary(grant{"a", 1, 10 * time.Second})
			clock.Advance(tt.advance)
			if got, _ := l.Renew("a", tt.token); got != tt.want {
				t.Fatalf("renew = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLessorRenewRestartsDeadline(t *testing.T) {
	clock, l := newPrimary(grant{"a", 1, 10 * time.Second})
	clock.Advance(9 * time.Second)
	if got, _ := l.Renew("a", 1); got != Renewed {
		t.Fatalf("renew = %v", got)
	}
	clock.Advance(9 * time.Second)
	if got := l.Expired(10); len(got) != 0 {
		t.Fatalf("expired %v 9s after a renewal of a 10s lease", keys(got))
	}
	clock.Advance(time.Second)
	if got := keys(l.Expired(10)); len(got) != 1 {
		t.Fatalf("expired = %v, want [a]", got)
	}
	// Once handed out for expiry, the lease cannot be renewed, and it is
	// not handed out twice.
	if got, _ := l.Renew("a", 1); got != RenewExpired {
		t.Fatalf("renew of an expiring lease = %v, want RenewExpired", got)
	}
	if got := l.Expired(10); len(got) != 0 {
		t.Fatalf("expired again: %v", keys(got))
	}
}

func TestLessorExpiredInDeadlineOrderWithLimit(t *testing.T) {
	clock, l := newPrimary(grant{"c", 3, 3 * time.Second}, grant{"a", 1, 1 * time.Second}, grant{"b", 2, 2 * time.Second})
	clock.Advance(5 * time.Second)
	if got := keys(l.Expired(2)); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("first expired = %v, want [a b]", got)
	}
	if got := keys(l.Expired(2)); len(got) != 1 || got[0] != "c" {
		t.Fatalf("then = %v, want [c]", got)
	}
}

func TestLessorRemoveKeepsNewerGrant(t *testing.T) {
	_, l := newPrimary(grant{"a", 1, time.Second})
	l.Grant("a", 2, time.Second, 0) // re-granted under a new token
	l.Remove("a", 1)                // a late removal of the old token
	if _, _, ok := l.Deadline("a", 2); !ok {
		t.Fatal("removing the old token dropped the new grant")
	}
	l.Remove("a", 2)
	if l.Len() != 0 {
		t.Fatalf("len = %d after removing every lease", l.Len())
	}
}

func TestLessorDemoteForgetsEverything(t *testing.T) {
	clock := newFakeClock()
	l := New(clock)
	l.Promote([]*fsm.Lease{{Key: "a", Token: 1, TTL: time.Second, Held: true}}, nil)
	l.Demote()
	clock.Advance(time.Hour)
	if got := l.Expired(10); len(got) != 0 {
		t.Fatalf("a demoted lessor expired %v", keys(got))
	}
	if got, _ := l.Renew("a", 1); got != RenewNotPrimary {
		t.Fatalf("renew on a demoted lessor = %v", got)
	}
	l.Grant("b", 2, time.Second, 0)
	if l.Len() != 0 {
		t.Fatal("a demoted lessor accepted a grant")
	}
}

// A late acquire by the holder with a shorter TTL never cuts short a
// deadline that an acknowledged renewal already set.
func TestLessorGrantNeverShortensTheSameLease(t *testing.T) {
	_, l := newPrimary(grant{"a", 1, time.Minute})
	l.Grant("a", 1, 5*time.Second, 0) // kept by a delayed acquire with a shorter TTL
	if left, _, _ := l.Deadline("a", 1); left != time.Minute {
		t.Fatalf("deadline = %v after a shorter re-grant, want the minute already promised", left)
	}
	l.Grant("a", 2, 5*time.Second, 0) // a new grant (new token) takes its own TTL
	if left, _, _ := l.Deadline("a", 2); left != 5*time.Second {
		t.Fatalf("deadline of the new grant = %v, want 5s", left)
	}
}

// A lease not renewed for two thirds of its TTL is stale (its holder
// missed renewals), unless an operator ended it: its renewals are refused
// on purpose, and the placement report must not blame its holder.
func TestLessorStaleSkipsEndedLeases(t *testing.T) {
	clock, l := newPrimary(grant{"a", 1, 3 * time.Second}, grant{"b", 2, 3 * time.Second})
	clock.Advance(2500 * time.Millisecond)
	if got := l.Stale(0); len(got) != 2 {
		t.Fatalf("stale = %+v, want a and b", got)
	}
	if _, ok := l.End("a", 1, "revoked"); !ok {
		t.Fatal("End(a) did not find the lease")
	}
	if got := l.Stale(0); len(got) != 1 || got[0].Key != "b" {
		t.Fatalf("stale after a was ended = %+v, want b only", got)
	}
}

// A renewal leaves the deadline queue alone; when the old deadline comes,
// Expired puts the lease back at its real one instead of expiring it, and
// Next names the earliest real deadline from then on.
func TestLessorRenewedLeaseTakesItsPlaceInTheQueueLater(t *testing.T) {
	clock, l := newPrimary(grant{"a", 1, 10 * time.Second}, grant{"b", 2, 12 * time.Second})
	clock.Advance(5 * time.Second)
	if got, _ := l.Renew("a", 1); got != Renewed { // a's deadline: 15s
		t.Fatalf("renew = %v", got)
	}
	if d, _ := l.Next(); d > 5*time.Second {
		t.Fatalf("Next = %v, want at most 5s (a's old place)", d)
	}
	clock.Advance(5 * time.Second) // 10s
	if got := l.Expired(10); len(got) != 0 {
		t.Fatalf("expired %v at a renewed lease's old deadline", keys(got))
	}
	if d, _ := l.Next(); d != 2*time.Second {
		t.Fatalf("Next = %v after the requeue, want 2s (b at 12s)", d)
	}
	clock.Advance(2 * time.Second) // 12s
	if got := keys(l.Expired(10)); len(got) != 1 || got[0] != "b" {
		t.Fatalf("expired = %v at 12s, want [b]", got)
	}
	if d, _ := l.Next(); d != 3*time.Second {
		t.Fatalf("Next = %v, want 3s (a at 15s)", d)
	}
	clock.Advance(3 * time.Second)
	if got := keys(l.Expired(10)); len(got) != 1 || got[0] != "a" {
		t.Fatalf("expired = %v at 15s, want [a]", got)
	}
}

// TestLessorFreezeReadsEveryDeadlineAndRefusesRenewals: Freeze returns the
// time each live lease has left with the record it belongs to, and from
// then on no renewal restarts a deadline (one that did would be missing
// from the hand-over) until Unfreeze; a grant still counts. Over the limit
// it freezes nothing.
func TestLessorFreezeReadsEveryDeadlineAndRefusesRenewals(t *testing.T) {
	clock := newFakeClock()
	l := New(clock)
	l.Promote([]*fsm.Lease{{Key: "a", Token: 1, TTL: 10 * time.Second, Held: true, ModifyIndex: 7}}, nil)
	l.Grant("b", 2, 4*time.Second, 9)
	l.Grant("c", 3, time.Second, 11)
	clock.Advance(2 * time.Second) // c's deadline passed: not handed over
	if got, gen := l.Freeze(1); got != nil || gen != 0 {
		t.Fatalf("Freeze over the limit = %v, %d; want nil, 0", got, gen)
	}
	if got, _ := l.Renew("a", 1); got != Renewed {
		t.Fatalf("renewal after a Freeze over the limit = %v, want Renewed", got)
	}
	clock.Advance(time.Second) // a: 9s left, b: 1s left
	got, gen := l.Freeze(10)
	sort.Slice(got, func(i, j int) bool { return got[i].Key < got[j].Key })
	want := []fsm.HandedLease{{Key: "a", Token: 1, ModifyIndex: 7, Left: 9 * time.Second}, {Key: "b", Token: 2, ModifyIndex: 9, Left: time.Second}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Freeze = %+v, want %+v", got, want)
	}
	if got, _ := l.Renew("a", 1); got != RenewNotPrimary {
		t.Errorf("renewal of a frozen lessor = %v, want RenewNotPrimary", got)
	}
	if left, _, _ := l.Deadline("a", 1); left != 9*time.Second {
		t.Errorf("a frozen lease has %v left, want the 9s handed over", left)
	}
	l.Grant("d", 4, 5*time.Second, 12)
	if left, _, ok := l.Deadline("d", 4); !ok || left != 5*time.Second {
		t.Errorf("a lease granted while frozen: %v, %t; want 5s tracked", left, ok)
	}
	// A leader that establishes again while its Handover is on the way
	// stays frozen: Demote and Promote leave the freeze alone.
	l.Demote()
	l.Promote([]*fsm.Lease{{Key: "a", Token: 1, TTL: 10 * time.Second, Held: true, ModifyIndex: 7}}, nil)
	if got, _ := l.Renew("a", 1); got != RenewNotPrimary {
		t.Errorf("renewal after Demote and Promote of a frozen lessor = %v, want RenewNotPrimary", got)
	}
	// Only the end of this freeze unfreezes, not that of an earlier one.
	l.UnfreezeIf(gen - 1)
	if got, _ := l.Renew("a", 1); got != RenewNotPrimary {
		t.Errorf("renewal after the end of an earlier freeze = %v, want RenewNotPrimary", got)
	}
	l.UnfreezeIf(gen)
	if got, _ := l.Renew("a", 1); got != Renewed {
		t.Errorf("renewal after UnfreezeIf = %v, want Renewed", got)
	}
}

// TestLessorPromoteCarriesHandedOverTime: Promote starts a lease named by
// a hand-over with the time it had left plus a tenth (not capped at the
// TTL: a lease renewed just before the hand-over keeps its tenth too),
// and only for the very record the hand-over named.
func TestLessorPromoteCarriesHandedOverTime(t *testing.T) {
	clock := newFakeClock()
	l := New(clock)
	held := []*fsm.Lease{
		{Key: "a", Token: 1, TTL: 10 * time.Second, Held: true, ModifyIndex: 7},
		{Key: "b", Token: 2, TTL: 10 * time.Second, Held: true, ModifyIndex: 8},
		{Key: "c", Token: 3, TTL: 10 * time.Second, Held: true, ModifyIndex: 12},
		{Key: "d", Token: 4, TTL: 10 * time.Second, Held: true, ModifyIndex: 9},
	}
	handed := map[string]fsm.HandedLease{
		"a": {Key: "a", Token: 1, ModifyIndex: 7, Left: 4 * time.Second},
		"b": {Key: "b", Token: 2, ModifyIndex: 8, Left: 9500 * time.Millisecond},
		"c": {Key: "c", Token: 3, ModifyIndex: 10, Left: time.Second}, // changed since
	}
	if n := l.Promote(held, handed); n != 2 {
		t.Errorf("Promote carried %d leases over, want 2", n)
	}
	for key, want := range map[string]time.Duration{"a": 4400 * time.Millisecond, "b": 10450 * time.Millisecond, "c": 10 * time.Second, "d": 10 * time.Second} {
		tok := map[string]uint64{"a": 1, "b": 2, "c": 3, "d": 4}[key]
		if left, _, _ := l.Deadline(key, tok); left != want {
			t.Errorf("%s: %v left after Promote, want %v", key, left, want)
		}
	}
}
