package fsm

import (
	"reflect"
	"testing"
	"time"
)

// TestApplyContract checks each command of the lease contract against a
// known state: setup is applied at indexes 1…n, cmd at n+1, and want is the
// full result, including the key's record afterwards.
func TestApplyContract(t *testing.T) {
	zoneA := map[string]string{"zone": "a"}
	zoneB := map[string]string{"zone": "b", "rack": "7"}
	// heldA and freedA are key a, created at index 1 and last changed at
	// index modified: held by holder under token, or freed by w1 (token 1)
	// for reason. released is w1's acquisition of a and its release.
	heldA := func(holder string, token, modified uint64) *Lease {
		return &Lease{Key: "a", Holder: holder, Token: token, TTL: ttl, Held: true,
			AcquiredAt: wall, CreateIndex: 1, ModifyIndex: modified}
	}
	freedA := func(reason Reason, modified uint64) *Lease {
		return &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Reason: reason,
			AcquiredAt: wall, CreateIndex: 1, ModifyIndex: modified}
	}
	released := []Command{acquire("a", "w1"), Release{Key: "a", Holder: "w1", Token: 1}}
	// expiredThen is w1's acquisition of a, its expiry, and an acquisition
	// of a by holder.
	expiredThen := func(holder string) []Command {
		return []Command{acquire("a", "w1"), Expire{Key: "a", Token: 1, Term: 1}, acquire("a", holder)}
	}

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
			want: Result{Code: Granted, Lease: &Lease{Key: "scene-01", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				Metadata: zoneA, AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 1}},
		},
		{
			name:  "grant takes the cluster-wide counter plus one",
			setup: []Command{acquire("a", "w1"), acquire("b", "w2"), acquire("a", "w1")},
			cmd:   acquire("c", "w3"),
			want: Result{Code: Granted, Lease: &Lease{Key: "c", Holder: "w3", Token: 3, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 4, ModifyIndex: 4}},
		},
		{
			name:  "re-acquire by the holder keeps the token and acquired_at, updates ttl and metadata",
			setup: []Command{Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: zoneA, Time: wall}},
			cmd:   Acquire{Key: "a", Holder: "w1", TTL: 30 * time.Second, Metadata: zoneB, Time: wall + 5e9},
			want: Result{Code: Kept, Lease: &Lease{Key: "a", Holder: "w1", Token: 1, TTL: 30 * time.Second, Held: true,
				Metadata: zoneB, AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 2}, MetadataChanged: true},
		},
		{
			name:  "re-acquire with the same metadata is kept and changes no metadata",
			setup: []Command{Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: zoneA, Time: wall}},
			cmd:   Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: map[string]string{"zone": "a"}, Time: wall},
			want: Result{Code: Kept, Lease: &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				Metadata: zoneA, AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 2}},
		},
		{
			name:  "re-acquire without metadata keeps the metadata",
			setup: []Command{Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: zoneA, Time: wall}},
			cmd:   Acquire{Key: "a", Holder: "w1", TTL: ttl, Time: wall},
			want: Result{Code: Kept, Lease: &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				Metadata: zoneA, AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 2}},
		},
		{
			name:  "acquire of a key held by another holder is refused and names the holder",
			setup: []Command{Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: zoneA, Time: wall}},
			cmd:   Acquire{Key: "a", Holder: "w2", TTL: time.Minute, Metadata: zoneB, Time: wall + 1},
			want: Result{Code: Held, Lease: &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				Metadata: zoneA, AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 1}},
		},
		{
			name: "acquire after release takes a new token and drops the old metadata",
			setup: []Command{
				Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: zoneA, Time: wall},
				Release{Key: "a", Holder: "w1", Token: 1},
			},
			cmd: Acquire{Key: "a", Holder: "w2", TTL: ttl, Time: wall + 7},
			want: Result{Code: Granted, Lease: &Lease{Key: "a", Holder: "w2", Token: 2, TTL: ttl, Held: true,
				AcquiredAt: wall + 7, CreateIndex: 1, ModifyIndex: 3}},
		},
		{
			name:  "acquire after expiry by the same holder takes a new token",
			setup: []Command{acquire("a", "w1"), Expire{Key: "a", Token: 1, Term: 1}},
			cmd:   acquire("a", "w1"),
			want:  Result{Code: Granted, Lease: heldA("w1", 2, 3)},
		},
		{
			name:  "acquire after revoke takes a new token",
			setup: []Command{acquire("a", "w1"), acquire("b", "w1"), Revoke{Key: "a"}},
			cmd:   acquire("a", "w2"),
			want:  Result{Code: Granted, Lease: heldA("w2", 3, 4)},
		},

		// Release.
		{
			name:  "release by the holder frees the key and keeps holder, token and metadata",
			setup: []Command{Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: zoneA, Time: wall}},
			cmd:   Release{Key: "a", Holder: "w1", Token: 1},
			want: Result{Code: Freed, Lease: &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Reason: ReasonReleased,
				Metadata: zoneA, AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 2}},
		},
		{
			name:  "release by another holder under the current token never matched: not holder",
			setup: []Command{acquire("a", "w1")},
			cmd:   Release{Key: "a", Holder: "w2", Token: 1},
			want:  Result{Code: NotHolder, Lease: heldA("w1", 1, 1)},
		},
		{
			name:  "release under a token the key never had: not holder",
			setup: []Command{acquire("a", "w1")},
			cmd:   Release{Key: "a", Holder: "w1", Token: 2},
			want:  Result{Code: NotHolder, Lease: heldA("w1", 1, 1)},
		},
		{
			name:  "release under the token of an earlier lease of the same holder changes nothing",
			setup: expiredThen("w1"),
			cmd:   Release{Key: "a", Holder: "w1", Token: 1},
			want:  Result{Code: NotHeld, Lease: heldA("w1", 2, 3)},
		},
		{
			name:  "release of a free key under a token it never had: not holder",
			setup: released,
			cmd:   Release{Key: "a", Holder: "w1", Token: 5},
			want:  Result{Code: NotHolder, Lease: freedA(ReasonReleased, 2)},
		},
		{
			name:  "release of a free key by another holder under its last token: not holder",
			setup: released,
			cmd:   Release{Key: "a", Holder: "w2", Token: 1},
			want:  Result{Code: NotHolder, Lease: freedA(ReasonReleased, 2)},
		},
		{
			name:  "release by a holder that lost the key to another under a newer token: already gone",
			setup: expiredThen("w2"),
			cmd:   Release{Key: "a", Holder: "w1", Token: 1},
			want:  Result{Code: NotHeld, Lease: heldA("w2", 2, 3)},
		},
		{
			name:  "release again is idempotent",
			setup: released,
			cmd:   Release{Key: "a", Holder: "w1", Token: 1},
			want:  Result{Code: NotHeld, Lease: freedA(ReasonReleased, 2)},
		},
		{
			name: "release of a key never seen",
			cmd:  Release{Key: "a", Holder: "w1", Token: 1},
			want: Result{Code: NotHeld, Lease: nil},
		},

		// Expire.
		{
			name:  "expire under the current token and established term frees the key",
			setup: []Command{LeaderEstablished{Term: 2}, acquire("a", "w1")},
			cmd:   Expire{Key: "a", Token: 1, Term: 2},
			want: Result{Code: Freed, Lease: &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Reason: ReasonExpired,
				AcquiredAt: wall, CreateIndex: 2, ModifyIndex: 3}},
		},
		{
			name:  "expire from a term newer than the established one frees the key",
			setup: []Command{LeaderEstablished{Term: 2}, acquire("a", "w1")},
			cmd:   Expire{Key: "a", Token: 1, Term: 3},
			want: Result{Code: Freed, Lease: &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Reason: ReasonExpired,
				AcquiredAt: wall, CreateIndex: 2, ModifyIndex: 3}},
		},
		{
			name:  "expire from a deposed leader's term changes nothing",
			setup: []Command{LeaderEstablished{Term: 2}, acquire("a", "w1"), LeaderEstablished{Term: 3}},
			cmd:   Expire{Key: "a", Token: 1, Term: 2},
			want: Result{Code: NotHeld, Lease: &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 2, ModifyIndex: 2}},
		},
		{
			name: "expire with the token of a lease already superseded changes nothing",
			setup: []Command{
				acquire("a", "w1"),
				Release{Key: "a", Holder: "w1", Token: 1},
				acquire("a", "w2"),
			},
			cmd:  Expire{Key: "a", Token: 1, Term: 1},
			want: Result{Code: NotHeld, Lease: heldA("w2", 2, 3)},
		},
		{
			name:  "expire of a free key changes nothing",
			setup: []Command{acquire("a", "w1"), Revoke{Key: "a"}},
			cmd:   Expire{Key: "a", Token: 1, Term: 1},
			want:  Result{Code: NotHeld, Lease: freedA(ReasonRevoked, 2)},
		},
		{
			name: "expire of a key never seen",
			cmd:  Expire{Key: "a", Token: 1, Term: 1},
			want: Result{Code: NotHeld, Lease: nil},
		},

		// Revoke.
		{
			name:  "revoke frees the key whoever holds it",
			setup: []Command{Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: zoneA, Time: wall}},
			cmd:   Revoke{Key: "a"},
			want: Result{Code: Freed, Lease: &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Reason: ReasonRevoked,
				Metadata: zoneA, AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 2}},
		},
		{
			name:  "revoke of a free key keeps the reason it was freed for",
			setup: released,
			cmd:   Revoke{Key: "a"},
			want:  Result{Code: NotHeld, Lease: freedA(ReasonReleased, 2)},
		},
		{
			name:  "revoke of a key never seen",
			setup: []Command{acquire("a", "w1")},
			cmd:   Revoke{Key: "b"},
			want:  Result{Code: NotFound, Lease: nil},
		},

		// Key controls: a refused acquisition changes nothing and takes no
		// token.
		{
			name:  "acquire of a disabled key never seen is refused",
			setup: []Command{SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}}},
			cmd:   acquire("a", "w1"),
			want:  Result{Code: Disabled, Lease: nil},
		},
		{
			name: "acquire of a disabled free key is refused and shows the record",
			setup: []Command{
				acquire("a", "w1"),
				Release{Key: "a", Holder: "w1", Token: 1},
				SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}},
			},
			cmd:  acquire("a", "w2"),
			want: Result{Code: Disabled, Lease: freedA(ReasonReleased, 2)},
		},
		{
			name: "the holder of a key disabled later cannot renew it",
			setup: []Command{
				Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: zoneA, Time: wall},
				SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}},
			},
			cmd: Acquire{Key: "a", Holder: "w1", TTL: time.Minute, Metadata: zoneB, Time: wall + 1},
			want: Result{Code: Disabled, Lease: &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Held: true, Ending: ReasonDisabled,
				Metadata: zoneA, AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 2}},
		},
		{
			name: "a disabled key answers disabled to a prohibited holder too",
			setup: []Command{
				SetKeyControl{Key: "a", Control: KeyControl{Disabled: true, Prohibited: []string{"w1"}}},
			},
			cmd:  acquire("a", "w1"),
			want: Result{Code: Disabled, Lease: nil},
		},
		{
			name:  "acquire by a prohibited holder is refused",
			setup: []Command{SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w3", "w1"}}}},
			cmd:   acquire("a", "w1"),
			want:  Result{Code: Prohibited, Lease: nil},
		},
		{
			name: "a prohibited holder that holds the key cannot renew it",
			setup: []Command{
				acquire("a", "w1"),
				SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w1"}}},
			},
			cmd: acquire("a", "w1"),
			want: Result{Code: Prohibited, Lease: &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Held: true, Ending: ReasonProhibited,
				AcquiredAt: wall, CreateIndex: 1, ModifyIndex: 2}},
		},
		{
			name:  "acquire by a holder that is not prohibited is granted",
			setup: []Command{SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w1", "w3"}}}},
			cmd:   acquire("a", "w2"),
			want: Result{Code: Granted, Lease: &Lease{Key: "a", Holder: "w2", Token: 1, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 2, ModifyIndex: 2}},
		},
		{
			name: "a prohibited holder meets a held key with prohibited, not held",
			setup: []Command{
				acquire("a", "w2"),
				SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w1"}}},
			},
			cmd:  acquire("a", "w1"),
			want: Result{Code: Prohibited, Lease: heldA("w2", 1, 1)},
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
			want: Result{Code: Granted, Lease: &Lease{Key: "c", Holder: "w1", Token: 1, TTL: ttl, Held: true,
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
			want: Result{Code: Granted, Lease: &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 4, ModifyIndex: 4}},
		},
		{
			name: "the controls of one key do not touch another",
			setup: []Command{
				SetKeyControl{Key: "a", Control: KeyControl{Disabled: true, Prohibited: []string{"w1"}}},
			},
			cmd: acquire("ab", "w1"),
			want: Result{Code: Granted, Lease: &Lease{Key: "ab", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 2, ModifyIndex: 2}},
		},
		{
			name: "release, expire and revoke ignore key controls",
			setup: []Command{
				acquire("a", "w1"),
				SetKeyControl{Key: "a", Control: KeyControl{Disabled: true, Prohibited: []string{"w1"}}},
			},
			cmd:  Release{Key: "a", Holder: "w1", Token: 1},
			want: Result{Code: Freed, Lease: freedA(ReasonReleased, 3)},
		},
		{
			name: "a drained worker still acquires: draining is the balancer's business",
			setup: []Command{
				WorkerDrain{Worker: "w1", Draining: true},
			},
			cmd: acquire("a", "w1"),
			want: Result{Code: Granted, Lease: &Lease{Key: "a", Holder: "w1", Token: 1, TTL: ttl, Held: true,
				AcquiredAt: wall, CreateIndex: 2, ModifyIndex: 2}},
		},

		// LeaderEstablished.
		{
			name:  "leader established has no lease outcome",
			setup: []Command{acquire("a", "w1")},
			cmd:   LeaderEstablished{Term: 4},
			want:  Result{Code: Done, Lease: nil},
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
			if got.MetadataChanged != tt.want.MetadataChanged {
				t.Errorf("metadata changed = %v, want %v", got.MetadataChanged, tt.want.MetadataChanged)
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
		{NotHolder.String(), "not_holder"},
		{CASFailed.String(), "cas_failed"},
		{Code(200).String(), "code(200)"},
		// The reasons are the HTTP API's "reason" values.
		{ReasonNone.String(), ""},
		{ReasonReleased.String(), "released"},
		{ReasonExpired.String(), "expired"},
		{ReasonRevoked.String(), "revoked"},
		{ReasonNeverAcquired.String(), "never_acquired"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
}
