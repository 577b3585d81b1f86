package fsm

import (
	"bytes"
	"testing"
)

// withSecret is acquire under the hash of secret.
func withSecret(key, holder, secret string) Acquire {
	a := acquire(key, holder)
	a.SecretHash = HashSecret(secret)
	return a
}

// A holder's name is not a credential: an acquisition, a metadata change
// or a release by the lease's holder name needs the lease's secret too;
// the secret's owner keeps its lease and token on a retry.
func TestLeaseSecretGuardsTheHoldersActions(t *testing.T) {
	const mine, theirs = "0123456789abcdef0123456789abcdef", "ffffffffffffffffffffffffffffffff"
	n := newNode(t)
	granted := n.one(withSecret("k", "alice", mine))
	if granted.Code != Granted {
		t.Fatalf("acquire = %v, want granted", granted.Code)
	}
	tests := []struct {
		name string
		cmd  Command
		want Code
	}{
		{"acquire with another secret", withSecret("k", "alice", theirs), Held},
		{"acquire without a secret", acquire("k", "alice"), Held},
		{"metadata change with another secret", func() Command {
			a := withSecret("k", "alice", theirs)
			a.Metadata = map[string]string{"addr": "evil:1"}
			return a
		}(), Held},
		{"release with another secret", Release{Key: "k", Holder: "alice", Token: granted.Lease.Token, SecretHash: HashSecret(theirs)}, WrongSecret},
		{"release without a secret", Release{Key: "k", Holder: "alice", Token: granted.Lease.Token}, WrongSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := n.one(tt.cmd)
			if r.Code != tt.want {
				t.Fatalf("%T = %v, want %v", tt.cmd, r.Code, tt.want)
			}
			if a, ok := tt.cmd.(Acquire); ok && !r.WrongSecret {
				t.Errorf("acquire of holder %q: WrongSecret = false, want true", a.Holder)
			}
			got := n.m.Get("k")
			if !got.Held || got.Token != granted.Lease.Token || got.Metadata != nil || got.ModifyIndex != granted.Lease.ModifyIndex {
				t.Errorf("lease after a refused %T = %s, want it unchanged (%s)", tt.cmd, leaseString(got), leaseString(granted.Lease))
			}
		})
	}
	retry := withSecret("k", "alice", mine)
	retry.Metadata = map[string]string{"addr": "me:1"}
	if r := n.one(retry); r.Code != Kept || r.Lease.Token != granted.Lease.Token || !r.MetadataChanged {
		t.Fatalf("retry with the secret = %v token %d changed %v, want kept token %d changed", r.Code, r.Lease.Token, r.MetadataChanged, granted.Lease.Token)
	}
	r := n.one(Release{Key: "k", Holder: "alice", Token: granted.Lease.Token, SecretHash: HashSecret(mine)})
	if r.Code != Freed || r.Lease.SecretHash != "" {
		t.Fatalf("release with the secret = %v hash %x, want freed without a hash", r.Code, r.Lease.SecretHash)
	}
}

// A lease acquired before secrets existed (no hash) can no longer be kept
// or released by a command that carries a secret; the entries written
// before secrets existed apply as they did.
func TestLeaseWithoutSecretIsNotKept(t *testing.T) {
	n := newNode(t)
	old := n.one(acquire("k", "alice"))
	if r := n.one(withSecret("k", "alice", "0123456789abcdef0123456789abcdef")); r.Code != Held {
		t.Errorf("acquire with a secret of a lease without one = %v, want held", r.Code)
	}
	rel := Release{Key: "k", Holder: "alice", Token: old.Lease.Token, SecretHash: HashSecret("0123456789abcdef0123456789abcdef")}
	if r := n.one(rel); r.Code != WrongSecret {
		t.Errorf("release with a secret of a lease without one = %v, want wrong_secret", r.Code)
	}
	if r := n.one(acquire("k", "alice")); r.Code != Kept {
		t.Errorf("old-format acquire of its old-format lease = %v, want kept", r.Code)
	}
	if r := n.one(Release{Key: "k", Holder: "alice", Token: old.Lease.Token}); r.Code != Freed {
		t.Errorf("old-format release of its old-format lease = %v, want freed", r.Code)
	}
}

// Snapshots carry the secret's hash, never the secret, and restore it.
func TestSnapshotKeepsSecretHashOnly(t *testing.T) {
	const secret = "5ec4e75ec4e75ec4e75ec4e75ec4e75e"
	n := newNode(t)
	n.all(withSecret("a", "alice", secret), withSecret("b", "bob", secret), acquire("c", "carol"))
	snap := n.m.snapshotBytes()
	if bytes.Contains(snap, []byte(secret)) {
		t.Fatal("the snapshot contains the secret")
	}
	m := restoredFrom(t, snap)
	for _, key := range []string{"a", "b", "c"} {
		if got, want := m.Get(key).SecretHash, n.m.Get(key).SecretHash; got != want {
			t.Errorf("hash of %q after restore = %x, want %x", key, got, want)
		}
	}
	if m.Get("a").SecretHash != HashSecret(secret) {
		t.Error("restored hash is not the secret's")
	}
}

// SecretMatches runs on every renewal: it tells equal hashes from
// different ones, and allocates nothing.
func TestSecretMatches(t *testing.T) {
	a, b := HashSecret("a"), HashSecret("b")
	for _, tt := range []struct {
		name           string
		stored, hashed string
		want           bool
	}{
		{"same", a, HashSecret("a"), true},
		{"other", a, b, false},
		{"none stored", "", a, false},
		{"none presented", a, "", false},
		{"none and none", "", "", true},
		{"last byte differs", a, a[:len(a)-1] + string(a[len(a)-1]^1), false},
	} {
		if got := SecretMatches(tt.stored, tt.hashed); got != tt.want {
			t.Errorf("%s: SecretMatches = %v, want %v", tt.name, got, tt.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { SecretMatches(a, b) }); n != 0 {
		t.Errorf("SecretMatches allocates %v times, want 0", n)
	}
}

// BenchmarkHashSecret is what a renewal call adds per distinct secret
// (one per Client): the SHA-256 of a 32-character secret.
func BenchmarkHashSecret(b *testing.B) {
	s := "0123456789abcdef0123456789abcdef"
	b.ReportAllocs()
	for b.Loop() {
		HashSecret(s)
	}
}

// BenchmarkSecretMatches is what a renewal adds per lease.
func BenchmarkSecretMatches(b *testing.B) {
	a, h := HashSecret("a"), HashSecret("a")
	b.ReportAllocs()
	for b.Loop() {
		SecretMatches(a, h)
	}
}
