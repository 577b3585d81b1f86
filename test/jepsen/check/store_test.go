package check

import (
	"testing"
	"time"

	"github.com/tenure-io/tenure/test/jepsen/history"
)

func TestFenced(t *testing.T) {
	w := func(proc string, token uint64, base, cur int64, ok bool) history.Event {
		return history.Event{T: 1, Kind: history.StoreWrite, Proc: proc, Key: "k", Token: token, Base: base, Value: base + 1, Current: cur, Accepted: ok}
	}
	cases := []struct {
		name  string
		evs   []history.Event
		valid bool
	}{
		{"in order, stale write refused", []history.Event{w("a", 1, 0, 0, true), w("b", 2, 1, 1, true), w("a", 1, 1, 2, false)}, true},
		{"lost update", []history.Event{w("a", 1, 0, 0, true), w("b", 2, 1, 1, true), w("a", 1, 1, 2, true)}, false},
		{"out of token order", []history.Event{w("b", 2, 0, 0, true), w("a", 1, 1, 1, true)}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if r := Fenced(c.evs); r.Valid != c.valid {
				t.Fatalf("valid %v, want %v:\n%s", r.Valid, c.valid, r)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	acq := func(proc string, at int64, token uint64) history.Event {
		return history.Event{T: at, Kind: history.Acquired, Proc: proc, Holder: proc, Key: "k", Token: token}
	}
	prev := func(proc string, at int64) history.Event {
		return history.Event{T: at, Kind: history.Released, Proc: proc, Key: "k"}
	}
	inv := func(proc string, op, at int64) history.Event {
		return history.Event{T: at, Kind: history.Invoke, Proc: proc, Op: op, F: "acquire", Key: "k"}
	}
	ok := func(proc string, op, at int64, token uint64) history.Event {
		return history.Event{T: at, Kind: history.OK, Proc: proc, Holder: proc, Op: op, F: "acquire", Key: "k", Token: token, Created: true}
	}
	cases := []struct {
		name  string
		evs   []history.Event
		valid bool
	}{
		{"increasing", []history.Event{acq("a", 10, 1), prev("b", 20), acq("b", 30, 2), inv("r", 1, 40), ok("r", 1, 50, 3)}, true},
		{"concurrent grants may come back in any order", []history.Event{inv("r", 1, 10), prev("b", 11), acq("b", 30, 2), ok("r", 1, 31, 1)}, true},
		{"holder after a register grant with a smaller token", []history.Event{inv("r", 1, 10), ok("r", 1, 20, 5), prev("b", 30), acq("b", 40, 4)}, false},
		{"register grant reusing a token", []history.Event{acq("a", 10, 7), inv("r", 1, 20), ok("r", 1, 30, 7)}, false},
		{"the same lease handed back to its holder", []history.Event{acq("a", 10, 7), prev("a", 20), acq("a", 30, 7)}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if r := Tokens(c.evs); r.Valid != c.valid {
				t.Fatalf("valid %v, want %v:\n%s", r.Valid, c.valid, r)
			}
		})
	}
}

func TestTerms(t *testing.T) {
	s := func(node, state string, term uint64) StatusSample {
		return StatusSample{Node: node, State: state, Term: term}
	}
	if r := Terms([]StatusSample{s("n1", "leader", 2), s("n2", "follower", 2), s("n2", "leader", 3), s("n1", "leader", 2)}); !r.Valid {
		t.Fatalf("one leader per term reported invalid:\n%s", r)
	}
	if r := Terms([]StatusSample{s("n1", "leader", 2), s("n2", "Leader", 2)}); r.Valid {
		t.Fatalf("two leaders in term 2 reported valid:\n%s", r)
	}
}

func TestPlacement(t *testing.T) {
	keys := []string{"a", "b"}
	cases := []struct {
		name   string
		owners map[string][]string
		leases map[string]string
		alive  []string
		valid  bool
	}{
		{"settled", map[string][]string{"w1": {"a"}, "w2": {"b"}}, map[string]string{"a": "w1", "b": "w2"}, []string{"w1", "w2"}, true},
		{"unowned", map[string][]string{"w1": {"a"}}, map[string]string{"a": "w1", "b": ""}, []string{"w1", "w2"}, false},
		{"owned twice", map[string][]string{"w1": {"a", "b"}, "w2": {"b"}}, map[string]string{"a": "w1", "b": "w2"}, []string{"w1", "w2"}, false},
		{"dead owner", map[string][]string{"w1": {"a"}, "w3": {"b"}}, map[string]string{"a": "w1", "b": "w3"}, []string{"w1"}, false},
		{"lease elsewhere", map[string][]string{"w1": {"a"}, "w2": {"b"}}, map[string]string{"a": "w2", "b": "w2"}, []string{"w1", "w2"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if r := Placement(keys, c.owners, c.leases, c.alive); r.Valid != c.valid {
				t.Fatalf("valid %v, want %v:\n%s", r.Valid, c.valid, r)
			}
		})
	}
}

func TestRecovery(t *testing.T) {
	const s = int64(time.Second)
	if r := Recovery("x", 10*s, 12*s, 5*time.Second); !r.Valid {
		t.Fatalf("2s against a 5s bound reported invalid:\n%s", r)
	}
	if r := Recovery("x", 10*s, 16*s, 5*time.Second); r.Valid {
		t.Fatalf("6s against a 5s bound reported valid:\n%s", r)
	}
	if r := Recovery("x", 10*s, 0, 5*time.Second); r.Valid {
		t.Fatalf("no recovery reported valid:\n%s", r)
	}
}
