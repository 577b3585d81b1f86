package fsm

import (
	"fmt"
	"testing"
)

// TestTokensStrictlyIncrease runs holders through many rounds of acquire,
// expire, release and revoke on a few keys and checks the fencing rule:
// every grant's token is above every token handed out before, on any key.
func TestTokensStrictlyIncrease(t *testing.T) {
	n := newNode(t)
	keys := []string{"partitions/0", "partitions/1", "partitions/2"}
	seen := map[uint64]string{}
	var last uint64
	lastPerKey := map[string]uint64{}
	grant := func(r Result) {
		t.Helper()
		if r.Code != Granted {
			return
		}
		tok := r.Lease.Token
		if tok <= last {
			t.Fatalf("grant of %q got token %d after token %d", r.Lease.Key, tok, last)
		}
		if prev, dup := seen[tok]; dup {
			t.Fatalf("token %d granted for %q and %q", tok, prev, r.Lease.Key)
		}
		if tok <= lastPerKey[r.Lease.Key] {
			t.Fatalf("key %q: token %d after %d", r.Lease.Key, tok, lastPerKey[r.Lease.Key])
		}
		seen[tok], last, lastPerKey[r.Lease.Key] = r.Lease.Key, tok, tok
	}
	for round := 0; round < 50; round++ {
		for i, key := range keys {
			holder := fmt.Sprintf("w%d", (round+i)%2) // the same holder comes back every other round
			r := n.one(acquire(key, holder))
			grant(r)
			if r.Code == Held {
				t.Fatalf("round %d: %q held after it was freed", round, key)
			}
			n.one(acquire(key, holder)) // a retry: kept, no new token
			tok := r.Lease.Token
			switch round % 3 {
			case 0:
				n.one(Release{Key: key, Holder: holder, Token: tok})
			case 1:
				n.one(Expire{Key: key, Token: tok, Term: n.term})
			case 2:
				n.one(Revoke{Key: key})
			}
		}
		rs := n.batch(acquire(keys[0], "x"), Release{Key: keys[0], Holder: "x", Token: last + 1}, acquire(keys[0], "y"))
		for _, r := range rs {
			grant(r)
		}
		n.one(Revoke{Key: keys[0]})
	}
	if got, want := n.m.LastToken(), last; got != want {
		t.Errorf("LastToken = %d, want the last grant's %d", got, want)
	}
	if got, want := len(seen), 50*(3+2); got != want {
		t.Errorf("%d grants, want %d", got, want)
	}
}

// TestLeaderEstablishedNeverLowersTheTerm: a stale LeaderEstablished (from a
// leader deposed before its entry committed) must not re-enable the expiry
// of an older term.
func TestLeaderEstablishedNeverLowersTheTerm(t *testing.T) {
	tests := []struct {
		name  string
		terms []uint64
		want  uint64
	}{
		{name: "none", terms: nil, want: 0},
		{name: "one", terms: []uint64{3}, want: 3},
		{name: "rising", terms: []uint64{1, 2, 5}, want: 5},
		{name: "an older one after a newer one", terms: []uint64{5, 3}, want: 5},
		{name: "the same again", terms: []uint64{4, 4}, want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			for _, term := range tt.terms {
				if r := n.one(LeaderEstablished{Term: term}); r.Code != Done {
					t.Fatalf("LeaderEstablished{%d} = %v, want %v", term, r.Code, Done)
				}
			}
			if got := n.m.EstablishedTerm(); got != tt.want {
				t.Errorf("EstablishedTerm = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestDeposedLeaderCannotExpire walks through the failover that etcd issue
// 15247 got wrong: the old leader's Expire reaches the log after the new
// leader has established itself and is renewing the lease.
func TestDeposedLeaderCannotExpire(t *testing.T) {
	n := newNode(t)
	n.term = 1
	n.one(LeaderEstablished{Term: 1})
	n.one(acquire("elections/scheduler", "sched-a"))

	n.term = 2 // a new leader is elected and establishes itself
	n.one(LeaderEstablished{Term: 2})
	// The old leader's lessor, unaware, proposed an Expire in term 1 that
	// commits now.
	if r := n.one(Expire{Key: "elections/scheduler", Token: 1, Term: 1}); r.Code != NotHeld {
		t.Fatalf("Expire from term 1 after term 2 was established = %v, want %v", r.Code, NotHeld)
	}
	if l := n.m.Get("elections/scheduler"); !l.Held || l.Holder != "sched-a" || l.Token != 1 {
		t.Fatalf("lease after the stale Expire = %s, want still held by sched-a under token 1", leaseString(l))
	}
	// The new leader's own Expire still works.
	if r := n.one(Expire{Key: "elections/scheduler", Token: 1, Term: 2}); r.Code != Freed {
		t.Fatalf("Expire from term 2 = %v, want %v", r.Code, Freed)
	}
}
