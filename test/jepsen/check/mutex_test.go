package check

import (
	"strings"
	"testing"

	"github.com/tenure-io/tenure/test/jepsen/history"
)

// hev is a holder event at t ms with a deadline at deadline ms (0: none).
func hev(kind, proc, key string, token uint64, t, deadline float64) history.Event {
	e := history.Event{Kind: kind, Proc: proc, Key: key, Holder: proc, Token: token, T: ms(t)}
	if deadline != 0 {
		e.Deadline = ms(deadline)
	}
	return e
}

func TestMutexValid(t *testing.T) {
	events := []history.Event{
		hev(history.Acquired, "w1", "k", 1, 0, 1000),
		hev(history.Belief, "w1", "k", 1, 100, 1000),
		hev(history.Renewed, "w1", "k", 1, 500, 1500),
		hev(history.Belief, "w1", "k", 1, 1400, 1500),
		hev(history.Released, "w1", "k", 1, 1450, 0),
		// The release caps w1's hold: w2 may start before 1500.
		hev(history.Acquired, "w2", "k", 2, 1460, 2460),
		hev(history.Belief, "w2", "k", 2, 1470, 2460),
		hev(history.Lost, "w2", "k", 2, 2000, 0),
		hev(history.Acquired, "w3", "k", 3, 2500, 3500),
		// Another key is independent.
		hev(history.Acquired, "w1", "other", 7, 100, 1100),
	}
	r := Mutex(events, MutexConfig{Name: "mutex"})
	wantValid(t, r)
	if r.Name != "mutex" || r.Ops != len(events) {
		t.Fatalf("name %q ops %d", r.Name, r.Ops)
	}
}

func TestMutexViolations(t *testing.T) {
	cases := []struct {
		name   string
		events []history.Event
		want   []string
	}{
		{"overlapping holds", []history.Event{
			hev(history.Acquired, "w1", "k", 1, 0, 1000),
			hev(history.Acquired, "w2", "k", 2, 900, 1900),
		}, []string{`key "k": holds overlap`, "w1", "w2", "token 1", "token 2", "[0.0ms, 1000.0ms]", "[900.0ms, 1900.0ms]"}},
		{"a hold without its Acquired starts at its first event", []history.Event{
			hev(history.Acquired, "w1", "k", 1, 0, 1000),
			hev(history.Renewed, "w2", "k", 2, 800, 1800),
		}, []string{"holds overlap", "[800.0ms, 1800.0ms]"}},
		{"a lost lease still covers its deadline", []history.Event{
			hev(history.Acquired, "w1", "k", 1, 0, 1000),
			hev(history.Lost, "w1", "k", 1, 200, 0),
			hev(history.Acquired, "w2", "k", 2, 500, 1500),
		}, []string{"holds overlap"}},
		{"acting past the deadline overlaps the next hold", []history.Event{
			hev(history.Acquired, "w1", "k", 1, 0, 1000),
			hev(history.Acquired, "w2", "k", 2, 1100, 2100),
			hev(history.Belief, "w1", "k", 1, 1200, 1000),
		}, []string{"holds overlap", "w1", "w2"}},
		{"belief after its own deadline", []history.Event{
			hev(history.Acquired, "w1", "k", 1, 0, 1000),
			hev(history.Belief, "w1", "k", 1, 1001, 1000),
		}, []string{"w1 acted after its local deadline", "1001.0ms", "1000.0ms", `key "k"`, "token 1"}},
		{"belief after the known deadline", []history.Event{
			hev(history.Acquired, "w1", "k", 1, 0, 1000),
			hev(history.Renewed, "w1", "k", 1, 500, 1500),
			hev(history.Belief, "w1", "k", 1, 1600, 0),
		}, []string{"w1 acted after its local deadline", "1600.0ms", "1500.0ms"}},
		{"tokens going down", []history.Event{
			hev(history.Acquired, "w1", "k", 5, 0, 1000),
			hev(history.Released, "w1", "k", 5, 100, 0),
			hev(history.Acquired, "w2", "k", 4, 200, 1200),
		}, []string{`key "k": token 4`, "follows token 5", "w1", "w2"}},
		{"a token granted twice", []history.Event{
			hev(history.Acquired, "w1", "k", 5, 0, 1000),
			hev(history.Released, "w1", "k", 5, 100, 0),
			hev(history.Acquired, "w2", "k", 5, 200, 1200),
		}, []string{"token 5", "follows token 5"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantViolation(t, Mutex(c.events, MutexConfig{}), c.want...)
		})
	}
}

// TestMutexLateReply: a reply that arrives after its own deadline opens no
// hold, so its place in the token order says nothing.
func TestMutexLateReply(t *testing.T) {
	events := []history.Event{
		hev(history.Acquired, "w2", "k", 6, 1200, 2200),
		hev(history.Acquired, "w1", "k", 5, 1300, 1000), // sent at 0, granted, reply delayed
	}
	r := Mutex(events, MutexConfig{})
	wantValid(t, r)
	if !strings.Contains(strings.Join(r.Notes, "\n"), "1 holds whose reply arrived after their own deadline") {
		t.Fatalf("no note counts the late reply:\n%s", r)
	}
}
