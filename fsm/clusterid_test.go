package fsm

import (
	"testing"
)

// The first cluster id applied stays: a later, other id is refused and an
// empty one too; the id survives a snapshot and restore.
func TestClusterIDFirstWins(t *testing.T) {
	m := New()
	if got := m.ClusterID(); got != "" {
		t.Fatalf("ClusterID of an empty machine = %q, want none", got)
	}
	steps := []struct {
		id   string
		want Code
	}{
		{"", Refused},
		{"c-1", Done},
		{"c-1", Done},
		{"c-2", Refused},
	}
	for i, s := range steps {
		r := m.Apply(logEntry(uint64(i+1), 1, ClusterID{ID: s.id})).(Result)
		if r.Code != s.want {
			t.Errorf("ClusterID{%q} at step %d = %v, want %v", s.id, i, r.Code, s.want)
		}
	}
	if got := m.ClusterID(); got != "c-1" {
		t.Fatalf("ClusterID = %q, want c-1 (the first applied)", got)
	}
	restored := restoredFrom(t, m.snapshotBytes())
	if got := restored.ClusterID(); got != "c-1" {
		t.Errorf("ClusterID after restore = %q, want c-1", got)
	}
}

func TestIsClusterID(t *testing.T) {
	if id, ok := IsClusterID(Encode(ClusterID{ID: "c-1"})); !ok || id != "c-1" {
		t.Errorf("IsClusterID(ClusterID{c-1}) = %q, %v", id, ok)
	}
	for _, data := range [][]byte{nil, {byte(TypeClusterID)}, {byte(TypeClusterID), 9, 0}, Encode(LeaderEstablished{Term: 3})} {
		if id, ok := IsClusterID(data); ok {
			t.Errorf("IsClusterID(%x) = %q, true; want false", data, id)
		}
	}
}
