package backup

import (
	"testing"

	"github.com/tenure-io/tenure/fsm"
)

// TestRestorePolicies: the real policy keeps every record of the running
// state; the negative control (tenure_unsafe_restore) only the held ones,
// which is what lets a key's token go backwards.
func TestRestorePolicies(t *testing.T) {
	running := []*fsm.Lease{{Key: "a", Token: 3, Held: true}, {Key: "b", Token: 5}}
	if got := KeepEveryRecord(running); len(got) != 2 {
		t.Errorf("KeepEveryRecord kept %d records, want 2", len(got))
	}
	if got := KeepHeldOnly(running); len(got) != 1 || got[0].Key != "a" {
		t.Errorf("KeepHeldOnly kept %v, want only a", got)
	}
}
