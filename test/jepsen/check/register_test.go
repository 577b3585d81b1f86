package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func check(t *testing.T, h *ops) Result {
	t.Helper()
	return Register(h.sorted(), RegisterConfig{})
}

// historyCase is a history that build makes and whether the register
// check must find it valid (if not, it must report a violation on key k).
type historyCase struct {
	name  string
	valid bool
	build func(h *ops)
}

// checkHistories checks the history of each case in a subtest of its
// name: valid, or with a violation that names key k.
func checkHistories(t *testing.T, cases []historyCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var h ops
			c.build(&h)
			if r := check(t, &h); c.valid {
				wantValid(t, r)
			} else {
				wantViolation(t, r, `key "k"`)
			}
		})
	}
}

func TestRegisterValid(t *testing.T) {
	var h ops
	h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
	h.add("p1", 500, 505, renew("k", "a", 1), kept(1))
	h.add("p2", 600, 610, acq("k", "b", 1000), heldBy("a", 1))
	h.add("p3", 700, 710, read("k"), shows("held", "a", 1))
	h.add("p1", 800, 805, rel("k", "a", 1), ok())
	h.add("p1", 810, 815, rel("k", "a", 1), ok()) // idempotent
	h.add("p3", 900, 905, read("k"), shows("free", "a", 1))
	h.add("p2", 1000, 1005, acq("k", "b", 1000), granted(2))
	h.add("p2", 1010, 1015, acq("k", "b", 1000), kept(2))
	h.add("p1", 1020, 1025, renew("k", "a", 1), lost("released"))
	// b never renews: its lease may expire from 1010 + 1000.
	h.add("p4", 2011, 2020, acq("k", "c", 1000), granted(3))
	h.add("p3", 0, 1, read("other"), shows("free", "", 0))
	h.add("p3", 2, 3, acq("other", "a", 50), fail("no_leader"))
	h.add("p3", 4, 5, acq("other", "a", 50), fail("overloaded"))
	wantValid(t, check(t, &h))
}

func TestRegisterIndeterminate(t *testing.T) {
	checkHistories(t, []historyCase{
		{"token revealed later", true, func(h *ops) {
			h.add("p1", 0, noReply, acq("k", "a", 1000), info())
			h.add("p2", 100, 110, read("k"), shows("held", "a", 5))
			h.add("p3", 200, 210, renew("k", "a", 5), kept(5))
			h.add("p2", 1300, 1310, acq("k", "b", 1000), granted(6))
		}},
		{"never took effect", true, func(h *ops) {
			h.add("p1", 0, 10, acq("k", "a", 1000), info())
			h.add("p2", 50, 60, acq("k", "b", 1000), granted(7))
			h.add("p3", 70, 80, read("k"), shows("held", "b", 7))
		}},
		{"took effect after the last lease expired", true, func(h *ops) {
			h.add("p2", 0, 5, acq("k", "b", 100), granted(1))
			h.add("p1", 10, noReply, acq("k", "a", 100), info())
			h.add("p3", 300, 310, read("k"), shows("held", "a", 2))
		}},
		{"renew and release of unknown outcome", true, func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p1", 900, noReply, renew("k", "a", 1), info())
			h.add("p2", 950, 960, read("k"), shows("held", "a", 1))
			h.add("p1", 1000, noReply, rel("k", "a", 1), info())
			h.add("p2", 1100, 1110, read("k"), shows("free", "a", 1))
		}},
		{"renew saw the deadline pass before the expire", true, func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p1", 1001, 1010, renew("k", "a", 1), lost("expired"))
			h.add("p2", 1011, 1012, read("k"), shows("held", "a", 1))
			h.add("p2", 1100, 1105, read("k"), shows("free", "a", 1))
		}},
	})
}

// TestRegisterViolations has one history per violation class.
func TestRegisterViolations(t *testing.T) {
	cases := []struct {
		name  string
		build func(h *ops)
	}{
		{"grant to another holder before expiry", func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p2", 500, 510, acq("k", "b", 1000), granted(2))
		}},
		{"grant before a renewed deadline", func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p1", 800, 805, renew("k", "a", 1), kept(1))
			h.add("p2", 1500, 1510, acq("k", "b", 1000), granted(2))
		}},
		{"token not above earlier tokens", func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(5))
			h.add("p1", 10, 15, rel("k", "a", 5), ok())
			h.add("p2", 20, 25, acq("k", "b", 1000), granted(3))
		}},
		{"renew of a released lease", func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p1", 10, 15, rel("k", "a", 1), ok())
			h.add("p1", 20, 25, renew("k", "a", 1), kept(1))
		}},
		{"held reported for a holder that does not hold", func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p2", 10, 20, acq("k", "b", 1000), heldBy("c", 1))
		}},
		{"held reported with a wrong token", func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p2", 10, 20, acq("k", "b", 1000), heldBy("a", 2))
		}},
		{"read free before expiry", func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p2", 100, 110, read("k"), shows("free", "a", 1))
		}},
		{"read held with a wrong token", func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p2", 10, 15, read("k"), shows("held", "a", 2))
		}},
		{"read never-held after a grant", func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p2", 3000, 3005, read("k"), shows("free", "", 0))
		}},
		{"new grant over the holder's own live lease", func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p1", 100, 105, acq("k", "a", 1000), granted(2))
		}},
		{"kept under another token", func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p1", 100, 105, acq("k", "a", 1000), kept(2))
		}},
		{"renew lost before expiry", func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p1", 100, 110, renew("k", "a", 1), lost("expired"))
		}},
		{"release that did not free", func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p1", 10, 15, rel("k", "a", 1), ok())
			h.add("p2", 20, 25, read("k"), shows("held", "a", 1))
		}},
		{"unknown token revealed below an earlier token", func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(5))
			h.add("p1", 10, 15, rel("k", "a", 5), ok())
			h.add("p2", 20, noReply, acq("k", "b", 1000), info())
			h.add("p3", 30, 35, read("k"), shows("held", "b", 3))
		}},
		{"seen before the expiry it depends on", func(h *ops) {
			// b's grant needs a's lease to expire at 1000 or later, so
			// it is linearized in [1000, 1005]; a read that completed
			// at 998 cannot have seen it.
			h.add("p1", 0, 0, acq("k", "a", 1000), granted(1))
			h.add("p2", 990, 1005, acq("k", "b", 1000), granted(2))
			h.add("p3", 995, 998, read("k"), shows("held", "b", 2))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var h ops
			c.build(&h)
			wantViolation(t, check(t, &h), `key "k"`, "earliest operation it leaves out")
		})
	}
}

func TestRegisterMinExpiry(t *testing.T) {
	var h ops
	h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
	h.add("p2", 940, 950, acq("k", "b", 1000), granted(2))
	wantViolation(t, check(t, &h), `key "k"`)
	r := Register(h.sorted(), RegisterConfig{MinExpiry: func(ttl int64) int64 { return ttl * 9 / 10 }})
	wantValid(t, r)
}

func TestRegisterHTML(t *testing.T) {
	dir := t.TempDir()
	for _, valid := range []bool{true, false} {
		var h ops
		h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
		if valid {
			h.add("p2", 1100, 1110, acq("k", "b", 1000), granted(2))
		} else {
			h.add("p2", 100, 110, acq("k", "b", 1000), granted(2))
		}
		path := filepath.Join(dir, "register.html")
		r := Register(h.sorted(), RegisterConfig{HTMLPath: path})
		if r.Valid != valid {
			t.Fatalf("valid = %v, want %v:\n%s", r.Valid, valid, r)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "acquire(b, ttl 1000.0ms)") {
			t.Fatalf("visualization lacks the operation descriptions")
		}
		if !valid && !strings.Contains(r.Violations[0], path) {
			t.Fatalf("violation does not point to the visualization: %s", r.Violations[0])
		}
	}
}

func TestRegisterBookkeeping(t *testing.T) {
	var h ops
	h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
	h.add("p2", 10, noReply, read("k"), info())
	events := h.sorted()
	events = append(events, kept(1)) // a completion without an invoke
	events[len(events)-1].Proc, events[len(events)-1].T = "p9", ms(20)
	r := Register(events, RegisterConfig{})
	wantValid(t, r)
	if r.Ops != 2 {
		t.Fatalf("Ops = %d, want 2", r.Ops)
	}
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{"1 indeterminate reads left out", "1 completions without an invoke"} {
		if !strings.Contains(notes, want) {
			t.Fatalf("notes lack %q:\n%s", want, notes)
		}
	}
	if r := Register(nil, RegisterConfig{}); !r.Valid {
		t.Fatalf("empty history: %s", r)
	}
}
