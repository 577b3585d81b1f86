package fsm

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestApplyContract checks each command of the lease contract against a
// known state: setup is applied at indexes 1…n, cmd at n+1, and want is the
// full result, including the key's record afterwards.
func TestApplyContract(t *testing.T) {
	zoneA := map[string]string{"zone": "a"}
	zoneB := map[string]string{"zone": "b", "rack": "7"}

	tests := []struct {
		name  string
		setup []Command
		cmd   Command
		want  Result
	}{
		// Acquire.
		{
			name: "acquire of a key never seen is granted token 1",
			cmd:  Acquire{Key: "scene-01", Holder: "w1", TTL: ttl, Metadata: zoneA, Time: wall},
			want: Result{Granted, &Lease{Key: "scene-01", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				Metadata: zoneA, AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 1}},
		},
		{
			name:  "grant takes the cluster-wide counter plus one",
			setup: []Command{acquire("a", "w1"), acquire("b", "w2"), acquire("a", "w1")},
			cmd:   acquire("c", "w3"),
			want: Result{Granted, &Lease{Key: "c", Holder: "w3", Token: 3, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 4, ModifyIndex: 4}},
		},
		{
			name:  "re-acquire by the holder keeps the token and acquired_at, updates ttl and metadata",
			setup: []Command{Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: zoneA, Time: wall}},
			cmd:   Acquire{Key: "a", Holder: "w1", TTL: 30 * time.Second, Metadata: zoneB, Time: wall + 5e9},
			want: Result{Kept, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: 30 * time.Second, Held: true,
				Metadata: zoneB, AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 2}},
		},
		{
			name:  "re-acquire without metadata keeps the metadata",
			setup: []Command{Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: zoneA, Time: wall}},
			cmd:   Acquire{Key: "a", Holder: "w1", TTL: ttl, Time: wall},
			want: Result{Kept, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				Metadata: zoneA, AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 2}},
		},
		{
			name:  "acquire of a key held by another holder is refused and names the holder",
			setup: []Command{Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: zoneA, Time: wall}},
			cmd:   Acquire{Key: "a", Holder: "w2", TTL: time.Minute, Metadata: zoneB, Time: wall + 1},
			want: Result{Held, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				Metadata: zoneA, AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 1}},
		},
		{
			name: "acquire after release takes a new token and drops the old metadata",
			setup: []Command{
				Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: zoneA, Time: wall},
				Release{Key: "a", Holder: "w1", Token: 1},
			},
			cmd: Acquire{Key: "a", Holder: "w2", TTL: ttl, Time: wall + 7},
			want: Result{Granted, &Lease{Key: "a", Holder: "w2", Token: 2, TTL: ttl, Held: true,
				AcquiredAt: wall + 7, CreateIndex: 1, ModifyIndex: 3}},
		},
		{
			name:  "acquire after expiry by the same holder takes a new token",
			setup: []Command{acquire("a", "w1"), Expire{Key: "a", Token: 1, Term: 1}},
			cmd:   acquire("a", "w1"),
			want: Result{Granted, &Lease{Key: "a", Holder: "w1", Token: 2, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 3}},
		},
		{
			name:  "acquire after revoke takes a new token",
			setup: []Command{acquire("a", "w1"), acquire("b", "w1"), Revoke{Key: "a"}},
			cmd:   acquire("a", "w2"),
			want: Result{Granted, &Lease{Key: "a", Holder: "w2", Token: 3, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 4}},
		},

		// Release.
		{
			name:  "release by the holder frees the key and keeps holder, token and metadata",
			setup: []Command{Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: zoneA, Time: wall}},
			cmd:   Release{Key: "a", Holder: "w1", Token: 1},
			want: Result{Freed, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Reason: ReasonReleased,
				Metadata: zoneA, AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 2}},
		},
		{
			name:  "release by another holder changes nothing",
			setup: []Command{acquire("a", "w1")},
			cmd:   Release{Key: "a", Holder: "w2", Token: 1},
			want: Result{NotHeld, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 1}},
		},
		{
			name:  "release with a wrong token changes nothing",
			setup: []Command{acquire("a", "w1")},
			cmd:   Release{Key: "a", Holder: "w1", Token: 2},
			want: Result{NotHeld, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 1}},
		},
		{
			name: "release under the token of an earlier lease of the same holder changes nothing",
			setup: []Command{
				acquire("a", "w1"),
				Expire{Key: "a", Token: 1, Term: 1},
				acquire("a", "w1"),
			},
			cmd: Release{Key: "a", Holder: "w1", Token: 1},
			want: Result{NotHeld, &Lease{Key: "a", Holder: "w1", Token: 2, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 3}},
		},
		{
			name:  "release again is idempotent",
			setup: []Command{acquire("a", "w1"), Release{Key: "a", Holder: "w1", Token: 1}},
			cmd:   Release{Key: "a", Holder: "w1", Token: 1},
			want: Result{NotHeld, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Reason: ReasonReleased,
				AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 2}},
		},
		{
			name: "release of a key never seen",
			cmd:  Release{Key: "a", Holder: "w1", Token: 1},
			want: Result{NotHeld, nil},
		},

		// Expire.
		{
			name:  "expire under the current token and established term frees the key",
			setup: []Command{LeaderEstablished{Term: 2}, acquire("a", "w1")},
			cmd:   Expire{Key: "a", Token: 1, Term: 2},
			want: Result{Freed, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Reason: ReasonExpired,
				AcquiredAt: wall, CreateIndex: 2, ModifyIndex: 3}},
		},
		{
			name:  "expire from a term newer than the established one frees the key",
			setup: []Command{LeaderEstablished{Term: 2}, acquire("a", "w1")},
			cmd:   Expire{Key: "a", Token: 1, Term: 3},
			want: Result{Freed, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Reason: ReasonExpired,
				AcquiredAt: wall, CreateIndex: 2, ModifyIndex: 3}},
		},
		{
			name:  "expire from a deposed leader's term changes nothing",
			setup: []Command{LeaderEstablished{Term: 2}, acquire("a", "w1"), LeaderEstablished{Term: 3}},
			cmd:   Expire{Key: "a", Token: 1, Term: 2},
			want: Result{NotHeld, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 2, ModifyIndex: 2}},
		},
		{
			name: "expire with the token of a lease already superseded changes nothing",
			setup: []Command{
				acquire("a", "w1"),
				Release{Key: "a", Holder: "w1", Token: 1},
				acquire("a", "w2"),
			},
			cmd: Expire{Key: "a", Token: 1, Term: 1},
			want: Result{NotHeld, &Lease{Key: "a", Holder: "w2", Token: 2, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 3}},
		},
		{
			name:  "expire of a free key changes nothing",
			setup: []Command{acquire("a", "w1"), Revoke{Key: "a"}},
			cmd:   Expire{Key: "a", Token: 1, Term: 1},
			want: Result{NotHeld, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Reason: ReasonRevoked,
				AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 2}},
		},
		{
			name: "expire of a key never seen",
			cmd:  Expire{Key: "a", Token: 1, Term: 1},
			want: Result{NotHeld, nil},
		},

		// Revoke.
		{
			name:  "revoke frees the key whoever holds it",
			setup: []Command{Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: zoneA, Time: wall}},
			cmd:   Revoke{Key: "a"},
			want: Result{Freed, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Reason: ReasonRevoked,
				Metadata: zoneA, AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 2}},
		},
		{
			name:  "revoke of a free key keeps the reason it was freed for",
			setup: []Command{acquire("a", "w1"), Release{Key: "a", Holder: "w1", Token: 1}},
			cmd:   Revoke{Key: "a"},
			want: Result{NotHeld, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Reason: ReasonReleased,
				AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 2}},
		},
		{
			name:  "revoke of a key never seen",
			setup: []Command{acquire("a", "w1")},
			cmd:   Revoke{Key: "b"},
			want:  Result{NotFound, nil},
		},

		// Key controls: a refused acquisition changes nothing and takes no
		// token.
		{
			name:  "acquire of a disabled key never seen is refused",
			setup: []Command{SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}}},
			cmd:   acquire("a", "w1"),
			want:  Result{Disabled, nil},
		},
		{
			name: "acquire of a disabled free key is refused and shows the record",
			setup: []Command{
				acquire("a", "w1"),
				Release{Key: "a", Holder: "w1", Token: 1},
				SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}},
			},
			cmd: acquire("a", "w2"),
			want: Result{Disabled, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Reason: ReasonReleased,
				AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 2}},
		},
		{
			name: "the holder of a key disabled later cannot renew it",
			setup: []Command{
				Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: zoneA, Time: wall},
				SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}},
			},
			cmd: Acquire{Key: "a", Holder: "w1", TTL: time.Minute, Metadata: zoneB, Time: wall + 1},
			want: Result{Disabled, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				Metadata: zoneA, AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 1}},
		},
		{
			name: "a disabled key answers disabled to a prohibited holder too",
			setup: []Command{
				SetKeyControl{Key: "a", Control: KeyControl{Disabled: true, Prohibited: []string{"w1"}}},
			},
			cmd:  acquire("a", "w1"),
			want: Result{Disabled, nil},
		},
		{
			name:  "acquire by a prohibited holder is refused",
			setup: []Command{SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w3", "w1"}}}},
			cmd:   acquire("a", "w1"),
			want:  Result{Prohibited, nil},
		},
		{
			name: "a prohibited holder that holds the key cannot renew it",
			setup: []Command{
				acquire("a", "w1"),
				SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w1"}}},
			},
			cmd: acquire("a", "w1"),
			want: Result{Prohibited, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 1}},
		},
		{
			name:  "acquire by a holder that is not prohibited is granted",
			setup: []Command{SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w1", "w3"}}}},
			cmd:   acquire("a", "w2"),
			want: Result{Granted, &Lease{Key: "a", Holder: "w2", Token: 1, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 2, ModifyIndex: 2}},
		},
		{
			name: "a prohibited holder meets a held key with prohibited, not held",
			setup: []Command{
				acquire("a", "w2"),
				SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w1"}}},
			},
			cmd: acquire("a", "w1"),
			want: Result{Prohibited, &Lease{Key: "a", Holder: "w2", Token: 1, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 1}},
		},
		{
			name: "refused acquisitions take no token",
			setup: []Command{
				SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}},
				SetKeyControl{Key: "b", Control: KeyControl{Prohibited: []string{"w1"}}},
				acquire("a", "w1"),
				acquire("b", "w1"),
				acquire("a", "w2"),
			},
			cmd: acquire("c", "w1"),
			want: Result{Granted, &Lease{Key: "c", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 6, ModifyIndex: 6}},
		},
		{
			name: "acquire after the control is cleared is granted",
			setup: []Command{
				SetKeyControl{Key: "a", Control: KeyControl{Disabled: true, Prohibited: []string{"w1"}}},
				acquire("a", "w1"),
				SetKeyControl{Key: "a"},
			},
			cmd: acquire("a", "w1"),
			want: Result{Granted, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 4, ModifyIndex: 4}},
		},
		{
			name: "the controls of one key do not touch another",
			setup: []Command{
				SetKeyControl{Key: "a", Control: KeyControl{Disabled: true, Prohibited: []string{"w1"}}},
			},
			cmd: acquire("ab", "w1"),
			want: Result{Granted, &Lease{Key: "ab", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 2, ModifyIndex: 2}},
		},
		{
			name: "release, expire and revoke ignore key controls",
			setup: []Command{
				acquire("a", "w1"),
				SetKeyControl{Key: "a", Control: KeyControl{Disabled: true, Prohibited: []string{"w1"}}},
			},
			cmd: Release{Key: "a", Holder: "w1", Token: 1},
			want: Result{Freed, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Reason: ReasonReleased,
				AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 3}},
		},
		{
			name: "a drained worker still acquires: draining is the balancer's business",
			setup: []Command{
				WorkerDrain{Worker: "w1", Draining: true},
			},
			cmd: acquire("a", "w1"),
			want: Result{Granted, &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 2, ModifyIndex: 2}},
		},

		// LeaderEstablished.
		{
			name:  "leader established has no lease outcome",
			setup: []Command{acquire("a", "w1")},
			cmd:   LeaderEstablished{Term: 4},
			want:  Result{Done, nil},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			n.all(tt.setup...)
			leasesBefore, indexBefore, tokenBefore := leaseState(n.m)

			got := n.one(tt.cmd)

			if got.Code != tt.want.Code {
				t.Errorf("code = %v, want %v", got.Code, tt.want.Code)
			}
			if !reflect.DeepEqual(got.Lease, tt.want.Lease) {
				t.Errorf("lease =\n  %s\nwant\n  %s", leaseString(got.Lease), leaseString(tt.want.Lease))
			}
			if key := keyOf(tt.cmd); key != "" {
				if stored := n.m.Get(key); !reflect.DeepEqual(stored, tt.want.Lease) {
					t.Errorf("Get(%q) =\n  %s\nwant the result's lease\n  %s", key, leaseString(stored), leaseString(tt.want.Lease))
				}
			}

			leasesAfter, indexAfter, tokenAfter := leaseState(n.m)
			switch got.Code {
			case Granted:
				if tokenAfter != tokenBefore+1 || got.Lease.Token != tokenAfter {
					t.Errorf("granted token %d, counter %d → %d; want the counter plus one", got.Lease.Token, tokenBefore, tokenAfter)
				}
			case Kept, Freed:
				if tokenAfter != tokenBefore {
					t.Errorf("LastToken = %d, want %d: only grants take tokens", tokenAfter, tokenBefore)
				}
				if indexAfter != n.index {
					t.Errorf("lease index = %d, want %d: the entry changed a lease", indexAfter, n.index)
				}
			default:
				if !reflect.DeepEqual(leasesAfter, leasesBefore) || indexAfter != indexBefore || tokenAfter != tokenBefore {
					t.Errorf("%v changed the state: leases %v → %v, lease index %d → %d, last token %d → %d",
						got.Code, leasesBefore, leasesAfter, indexBefore, indexAfter, tokenBefore, tokenAfter)
				}
			}
		})
	}
}

func keyOf(c Command) string {
	switch c := c.(type) {
	case Acquire:
		return c.Key
	case Release:
		return c.Key
	case Expire:
		return c.Key
	case Revoke:
		return c.Key
	}
	return ""
}

// TestApplyBatch checks that a Batch applies its commands in order, in one
// entry, each with its own result.
func TestApplyBatch(t *testing.T) {
	type outcome struct {
		code   Code
		holder string
		token  uint64
	}
	tests := []struct {
		name  string
		setup []Command
		batch []Command
		want  []outcome
		// key and its holder and token after the batch.
		key    string
		holder string
		token  uint64
		held   bool
	}{
		{
			name:  "release then acquire by a waiter hands the key over in one entry",
			setup: []Command{acquire("k", "owner")},
			batch: []Command{Release{Key: "k", Holder: "owner", Token: 1}, acquire("k", "waiter")},
			want:  []outcome{{Freed, "owner", 1}, {Granted, "waiter", 2}},
			key:   "k", holder: "waiter", token: 2, held: true,
		},
		{
			name:  "acquire before the release in the same entry is refused",
			setup: []Command{acquire("k", "owner")},
			batch: []Command{acquire("k", "waiter"), Release{Key: "k", Holder: "owner", Token: 1}},
			want:  []outcome{{Held, "owner", 1}, {Freed, "owner", 1}},
			key:   "k", holder: "owner", token: 1, held: false,
		},
		{
			name: "results follow command order across keys",
			batch: []Command{
				acquire("a", "w1"),
				acquire("a", "w2"),
				acquire("b", "w2"),
				Revoke{Key: "a"},
				acquire("a", "w2"),
				Release{Key: "b", Holder: "w2", Token: 2},
				Revoke{Key: "c"},
				LeaderEstablished{Term: 9},
				Expire{Key: "a", Token: 3, Term: 8},
			},
			want: []outcome{
				{Granted, "w1", 1},
				{Held, "w1", 1},
				{Granted, "w2", 2},
				{Freed, "w1", 1},
				{Granted, "w2", 3},
				{Freed, "w2", 2},
				{NotFound, "", 0},
				{Done, "", 0},
				{NotHeld, "w2", 3},
			},
			key: "a", holder: "w2", token: 3, held: true,
		},
		{
			name:  "an empty batch changes nothing",
			setup: []Command{acquire("k", "owner")},
			batch: nil,
			want:  []outcome{},
			key:   "k", holder: "owner", token: 1, held: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			n.all(tt.setup...)

			results := n.batch(tt.batch...)

			got := make([]outcome, len(results))
			for i, r := range results {
				got[i] = outcome{code: r.Code}
				if r.Lease != nil {
					got[i].holder, got[i].token = r.Lease.Holder, r.Lease.Token
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("results = %+v\nwant      %+v", got, tt.want)
			}
			l := n.m.Get(tt.key)
			if l == nil {
				t.Fatalf("Get(%q) = nil after the batch", tt.key)
			}
			if l.Holder != tt.holder || l.Token != tt.token || l.Held != tt.held {
				t.Errorf("Get(%q) = holder %q token %d held %t, want holder %q token %d held %t",
					tt.key, l.Holder, l.Token, l.Held, tt.holder, tt.token, tt.held)
			}
		})
	}
}

// TestApplyBatchSharesOneIndex checks that every lease a batch changes
// carries the batch entry's index, as one Raft entry.
func TestApplyBatchSharesOneIndex(t *testing.T) {
	n := newNode(t)
	n.all(acquire("a", "w1"), acquire("b", "w1"))
	n.batch(Release{Key: "a", Holder: "w1", Token: 1}, acquire("a", "w2"), Revoke{Key: "b"}, acquire("c", "w3"))

	for _, key := range []string{"a", "b", "c"} {
		if got := n.m.Get(key).ModifyIndex; got != 3 {
			t.Errorf("Get(%q).ModifyIndex = %d, want 3 (the batch's index)", key, got)
		}
	}
	if _, _, lease := n.m.Indexes(); lease != 3 {
		t.Errorf("lease index = %d, want 3", lease)
	}
}

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

// TestApplyUnknownType checks the rule for command types this build does
// not know: panic (so that a replica never silently diverges) unless the
// writer flagged the type ignorable.
func TestApplyUnknownType(t *testing.T) {
	ignorable := []byte{byte(IgnorableFlag | 0x11), version1, 0xde, 0xad}
	ignorableNewVersion := []byte{byte(IgnorableFlag | 0x7f), 9}
	tests := []struct {
		name  string
		data  []byte
		panic bool
		// want is the result when Apply does not panic.
		want interface{}
	}{
		{name: "unknown type", data: []byte{byte(unusedType), version1}, panic: true},
		{name: "unknown type with a payload", data: []byte{0x42, version1, 1, 2, 3}, panic: true},
		{name: "type zero", data: []byte{0x00, version1}, panic: true},
		{name: "known type with the ignorable flag means another command", data: append([]byte{byte(TypeRevoke | IgnorableFlag)}, Encode(Revoke{Key: "a"})[1:]...), want: Result{Code: Done}},
		{name: "ignorable unknown type", data: ignorable, want: Result{Code: Done}},
		{name: "ignorable unknown type of an unknown version", data: ignorableNewVersion, want: Result{Code: Done}},
		{
			name: "ignorable unknown type inside a batch",
			data: rawBatch(Encode(Revoke{Key: "a"}), ignorable, Encode(acquire("a", "w2"))),
			want: []Result{{Code: Freed}, {Code: Done}, {Code: Granted}},
		},
		{name: "unknown type inside a batch", data: rawBatch(Encode(Revoke{Key: "a"}), []byte{byte(unusedType), version1}), panic: true},
		{name: "malformed placement command", data: []byte{byte(TypeWorkerDrain), version1, 1, 'w', 2}, panic: true},
		{name: "placement command before an unknown type in a batch", data: rawBatch(Encode(WorkerDrain{Worker: "w", Draining: true}), []byte{byte(unusedType), version1}), panic: true},
		{name: "unknown version", data: append([]byte{byte(TypeRevoke), 2}, Encode(Revoke{Key: "a"})[2:]...), panic: true},
		{name: "unknown version inside a batch", data: rawBatch(Encode(Revoke{Key: "a"}), []byte{byte(TypeLeaderEstablished), 0, 5}), panic: true},
		{name: "nested batch", data: rawBatch(Encode(Revoke{Key: "a"}), Encode(Batch{})), panic: true},
		{name: "truncated command", data: Encode(acquire("a", "w2"))[:5], panic: true},
		{name: "empty entry", data: nil, panic: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			n.one(Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: map[string]string{"m": "1"}, Time: wall})
			before := viewOf(n.m)
			changed := n.m.Changed()

			if tt.panic {
				v := mustPanic(t, func() { n.applyRaw(tt.data) })
				if msg := fmt.Sprint(v); !strings.Contains(msg, "index 2") {
					t.Errorf("panic %q does not name the entry's index 2", msg)
				}
				// Nothing of the entry is applied, not even the part of a
				// batch before the bad command.
				assertView(t, viewOf(n.m), before)
				if isClosed(changed) {
					t.Error("Changed() closed by an entry that was not applied")
				}
				return
			}

			got := n.applyRaw(tt.data)
			if !sameCodes(got, tt.want) {
				t.Fatalf("Apply = %s, want codes of %s", codes(got), codes(tt.want))
			}
			if _, single := tt.want.(Result); single {
				// An ignored entry changes nothing but the applied index.
				want := before
				want.Applied = 2
				assertView(t, viewOf(n.m), want)
				if isClosed(changed) {
					t.Error("Changed() closed by an ignored entry")
				}
			}
		})
	}
}

func codes(v interface{}) string {
	switch v := v.(type) {
	case Result:
		return v.Code.String()
	case []Result:
		s := make([]string, len(v))
		for i, r := range v {
			s[i] = r.Code.String()
		}
		return "[" + strings.Join(s, " ") + "]"
	}
	return fmt.Sprintf("%T", v)
}

func sameCodes(got, want interface{}) bool {
	switch w := want.(type) {
	case Result:
		g, ok := got.(Result)
		return ok && g.Code == w.Code
	case []Result:
		g, ok := got.([]Result)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if g[i].Code != w[i].Code {
				return false
			}
		}
		return true
	}
	return false
}

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

// TestIndexes checks the indexes that reads report: the applied index moves
// with every entry, the lease index only with entries that change a lease.
func TestIndexes(t *testing.T) {
	n := newNode(t)
	steps := []struct {
		term              uint64
		cmd               Command
		applied, leaseIdx uint64
	}{
		{1, acquire("a", "w1"), 1, 1},
		{1, acquire("a", "w2"), 2, 1},
		{2, LeaderEstablished{Term: 2}, 3, 1},
		{2, acquire("a", "w1"), 4, 4},
		{3, Revoke{Key: "zzz"}, 5, 4},
		{3, Revoke{Key: "a"}, 6, 6},
	}
	for _, s := range steps {
		n.term = s.term
		n.applyRaw(Encode(s.cmd))
		applied, term, lease := n.m.Indexes()
		if applied != s.applied || term != s.term || lease != s.leaseIdx {
			t.Errorf("after %T at index %d: Indexes() = %d, %d, %d; want %d, %d, %d",
				s.cmd, n.index, applied, term, lease, s.applied, s.term, s.leaseIdx)
		}
		if _, listIdx := n.m.List(Filter{}); listIdx != s.leaseIdx {
			t.Errorf("after %T at index %d: List index = %d, want %d", s.cmd, n.index, listIdx, s.leaseIdx)
		}
	}
}

// TestList checks the filters of GET /v1/leases and its key order.
func TestList(t *testing.T) {
	n := newNode(t)
	n.all(
		acquire("partitions/2", "w1"),
		acquire("partitions/10", "w2"),
		acquire("partitions/1", "w1"),
		acquire("scene-01", "w2"),
		acquire("elections/scheduler", "w1"),
		Release{Key: "partitions/10", Holder: "w2", Token: 2},
		Revoke{Key: "elections/scheduler"},
		acquire("scene-02", "w3"),
		acquire("scene-01", "w3"), // held by w2: refused
	)
	tests := []struct {
		name   string
		filter Filter
		want   []string
	}{
		{name: "everything, ordered by key", filter: Filter{}, want: []string{"elections/scheduler", "partitions/1", "partitions/10", "partitions/2", "scene-01", "scene-02"}},
		{name: "prefix", filter: Filter{Prefix: "partitions/"}, want: []string{"partitions/1", "partitions/10", "partitions/2"}},
		{name: "prefix that is a whole key", filter: Filter{Prefix: "partitions/1"}, want: []string{"partitions/1", "partitions/10"}},
		{name: "held", filter: Filter{State: "held"}, want: []string{"partitions/1", "partitions/2", "scene-01", "scene-02"}},
		{name: "free keeps their last holder", filter: Filter{State: "free", Holder: "w1"}, want: []string{"elections/scheduler"}},
		{name: "free", filter: Filter{State: "free"}, want: []string{"elections/scheduler", "partitions/10"}},
		{name: "holder", filter: Filter{Holder: "w2"}, want: []string{"partitions/10", "scene-01"}},
		{name: "held by holder under prefix", filter: Filter{Prefix: "partitions/", State: "held", Holder: "w1"}, want: []string{"partitions/1", "partitions/2"}},
		{name: "no match", filter: Filter{Prefix: "nope"}, want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leases, index := n.m.List(tt.filter)
			got := make([]string, len(leases))
			for i, l := range leases {
				got[i] = l.Key
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("List(%+v) = %q, want %q", tt.filter, got, tt.want)
			}
			if index != 8 {
				t.Errorf("List index = %d, want 8 (the last entry that changed a lease)", index)
			}
		})
	}

	var held []string
	for _, l := range n.m.Held() {
		held = append(held, l.Key)
	}
	if want := []string{"partitions/1", "partitions/2", "scene-01", "scene-02"}; !reflect.DeepEqual(held, want) {
		t.Errorf("Held() = %q, want %q", held, want)
	}
}

// TestLeasesHandedOutAreNotModified: callers (the HTTP layer, a snapshot in
// progress) may keep the *Lease values they read while Apply goes on.
func TestLeasesHandedOutAreNotModified(t *testing.T) {
	n := newNode(t)
	granted := n.one(Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: map[string]string{"v": "1"}, Time: wall}).Lease
	read := n.m.Get("a")
	want := *read

	n.one(Acquire{Key: "a", Holder: "w1", TTL: time.Hour, Metadata: map[string]string{"v": "2"}, Time: wall})
	n.one(Release{Key: "a", Holder: "w1", Token: 1})
	n.one(acquire("a", "w2"))

	for name, l := range map[string]*Lease{"the granted result": granted, "Get before the changes": read} {
		if !reflect.DeepEqual(*l, want) {
			t.Errorf("%s changed under the caller:\n  %s\nwant\n  %s", name, leaseString(l), leaseString(&want))
		}
	}
}

// TestConcurrentReads runs the read methods on other goroutines while
// entries are applied and snapshots persisted, as the HTTP layer and Raft
// do; run it with -race. Every List is ordered and its index never goes
// backwards.
func TestConcurrentReads(t *testing.T) {
	n := newNode(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last, lastGroup uint64
			for {
				select {
				case <-stop:
					return
				case <-n.m.Changed():
				default:
				}
				leases, index := n.m.List(Filter{Prefix: "k"})
				if index < last {
					errs <- fmt.Errorf("list index went back from %d to %d", last, index)
					return
				}
				last = index
				for i := 1; i < len(leases); i++ {
					if leases[i-1].Key >= leases[i].Key {
						errs <- fmt.Errorf("list out of order: %q before %q", leases[i-1].Key, leases[i].Key)
						return
					}
				}
				_ = n.m.Get("k7")
				_ = n.m.Held()
				n.m.Indexes()
				n.m.LastToken()
				n.m.EstablishedTerm()

				groups, gi := n.m.Groups()
				if gi < lastGroup {
					errs <- fmt.Errorf("group index went back from %d to %d", lastGroup, gi)
					return
				}
				lastGroup = gi
				for _, g := range groups { // read what Apply must not write
					for range g.Assignment {
					}
					_ = append([]string(nil), g.Keys...)
				}
				_ = n.m.Group("g")
				_ = n.m.Control("k3").Prohibits("w1")
				_ = n.m.Drained("w2")
				_ = n.m.DrainedWorkers()
				_ = n.m.GroupIndex()
			}
		}()
	}
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
	})

	n.one(GroupPut{Name: "g", Keys: []string{"k1", "k2", "k3"}})
	for i := 0; i < 2000; i++ {
		key := fmt.Sprintf("k%d", i%37)
		if i%7 == 0 {
			w := fmt.Sprintf("w%d", i%3)
			n.batch(
				Assign{Group: "g", Assignment: map[string]string{"k1": w, "k2": w, key: w}},
				GroupKeys{Name: "g", Add: []string{key}, Remove: []string{fmt.Sprintf("k%d", (i+1)%37)}},
				SetKeyControl{Key: "k3", Control: KeyControl{Prohibited: []string{w}}},
				WorkerDrain{Worker: w, Draining: i%2 == 0},
			)
		}
		r := n.one(acquire(key, fmt.Sprintf("w%d", i%3)))
		if i%5 == 0 {
			snap, err := n.m.Snapshot()
			if err != nil {
				t.Fatalf("Snapshot: %v", err)
			}
			done := make(chan error, 1)
			go func() { done <- snap.Persist(&fakeSink{}) }() // concurrent with the next Apply, as in Raft
			n.one(Revoke{Key: key})
			if err := <-done; err != nil {
				t.Fatalf("Persist: %v", err)
			}
			snap.Release()
		} else if r.Code == Granted || r.Code == Kept {
			n.one(Release{Key: key, Holder: r.Lease.Holder, Token: r.Lease.Token})
		}
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

func TestCodeAndReasonStrings(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{Granted.String(), "granted"},
		{Kept.String(), "kept"},
		{Held.String(), "held"},
		{Freed.String(), "freed"},
		{NotHeld.String(), "not_held"},
		{NotFound.String(), "not_found"},
		{Done.String(), "done"},
		{Disabled.String(), "disabled"},
		{Prohibited.String(), "prohibited"},
		{Code(200).String(), "code(200)"},
		// The reasons are the HTTP API's "reason" values.
		{ReasonNone.String(), ""},
		{ReasonReleased.String(), "released"},
		{ReasonExpired.String(), "expired"},
		{ReasonRevoked.String(), "revoked"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
}
