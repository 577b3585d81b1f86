package check

import (
	"testing"

	"github.com/tenure-io/tenure/test/jepsen/history"
)

// A hand-over is warm when the new worker prepared the key while the old
// one held it; a prepare before the old hold began, by a third worker, or
// a hand-over after a loss, is not.
func TestWarmHandOffs(t *testing.T) {
	ev := func(t int64, kind, proc, key, holder string, token uint64) history.Event {
		return history.Event{T: t, Kind: kind, Proc: proc, Key: key, Holder: holder, Token: token}
	}
	events := []history.Event{
		// k: a holds (1), b prepares at 5, a releases at 6, b holds (2):
		// warm.
		ev(1, history.Acquired, "a", "k", "a#1", 1),
		ev(5, history.Prepared, "b", "k", "", 0),
		ev(6, history.Released, "a", "k", "a#1", 1),
		ev(7, history.Acquired, "b", "k", "b#1", 2),
		// Then back to a, which prepared only before b's hold: cold.
		ev(2, history.Prepared, "a", "k", "", 0),
		ev(8, history.Released, "b", "k", "b#1", 2),
		ev(9, history.Acquired, "a", "k", "a#1", 3),
		// j: c prepares, but d takes it over: cold.
		ev(1, history.Acquired, "a", "j", "a#1", 1),
		ev(2, history.Prepared, "c", "j", "", 0),
		ev(3, history.Released, "a", "j", "a#1", 1),
		ev(4, history.Acquired, "d", "j", "d#1", 2),
		// i: lost, then taken: no hand-back, not counted.
		ev(1, history.Acquired, "a", "i", "a#1", 1),
		ev(2, history.Lost, "a", "i", "a#1", 1),
		ev(3, history.Acquired, "b", "i", "b#1", 2),
	}
	handOvers, warm := WarmHandOffs(events)
	if handOvers != 3 || warm != 1 {
		t.Errorf("WarmHandOffs = %d hand-overs, %d warm; want 3 and 1", handOvers, warm)
	}
}
