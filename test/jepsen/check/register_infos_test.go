package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/test/jepsen/history"
)

// TestRegisterIndeterminateEffects covers the ways the model applies
// operations of unknown outcome: where one is needed, and never twice.
func TestRegisterIndeterminateEffects(t *testing.T) {
	// twoGrants adds reads that see a's lease under token 2 and then,
	// after its release, under token 3.
	twoGrants := func(h *ops) {
		h.add("p2", 10, 15, read("k"), shows("held", "a", 2))
		h.add("p3", 20, 25, rel("k", "a", 2), ok())
		h.add("p2", 30, 35, read("k"), shows("held", "a", 3))
	}
	// twoAcquires adds two identical acquires of unknown outcome.
	twoAcquires := func(h *ops) {
		h.add("p1", 0, noReply, acq("k", "a", 100), info())
		h.add("p4", 1, noReply, acq("k", "a", 100), info())
	}
	checkHistories(t, []historyCase{
		{"acquire revealed by its holder's release", true, func(h *ops) {
			h.add("p1", 0, 5, acq("k", "b", 1000), granted(12))
			h.add("p1", 10, 15, rel("k", "b", 12), ok())
			h.add("p2", 20, 30, acq("k", "a", 1000), info())
			h.add("p2", 40, 45, rel("k", "a", 13), ok())
			h.add("p3", 50, 55, read("k"), shows("free", "a", 13))
		}},
		{"acquire revealed by a held reply without a token", true, func(h *ops) {
			h.add("p2", 0, noReply, acq("k", "a", 1000), info())
			h.add("p3", 50, 55, acq("k", "b", 1000), history.Event{Kind: history.Fail, Err: "held", Holder: "a"})
		}},
		{"release needed by a later grant", true, func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p1", 10, 20, rel("k", "a", 1), info())
			h.add("p2", 100, 105, acq("k", "b", 1000), granted(2))
		}},
		{"release that took effect late", true, func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p1", 10, 20, rel("k", "a", 1), info())
			h.add("p2", 100, 105, read("k"), shows("held", "a", 1))
			h.add("p2", 110, 115, read("k"), shows("free", "a", 1))
		}},
		{"one acquire granting twice", false, func(h *ops) {
			h.add("p1", 0, noReply, acq("k", "a", 1000), info())
			twoGrants(h)
		}},
		{"two identical acquires granting twice", true, func(h *ops) {
			twoAcquires(h)
			twoGrants(h)
		}},
		{"two identical acquires granting three times", false, func(h *ops) {
			twoAcquires(h)
			twoGrants(h)
			h.add("p3", 40, 45, rel("k", "a", 3), ok())
			h.add("p2", 50, 55, read("k"), shows("held", "a", 4))
		}},
		{"acquire cannot take effect before its invoke", false, func(h *ops) {
			h.add("p2", 10, 15, read("k"), shows("held", "a", 1))
			h.add("p1", 20, noReply, acq("k", "a", 1000), info())
		}},
		{"shorter TTL from an indeterminate acquire", true, func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p1", 10, 20, acq("k", "a", 100), info())
			h.add("p1", 30, 35, renew("k", "a", 1), kept(1))
			h.add("p2", 200, 210, acq("k", "b", 1000), granted(2))
		}},
		{"renew of unknown outcome under a shorter TTL", true, func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p1", 10, 20, acq("k", "a", 100), info())
			h.add("p1", 30, 40, renew("k", "a", 1), info())
			h.add("p2", 300, 310, acq("k", "b", 1000), granted(2))
		}},
		{"renew that cannot shorten a fixed TTL", false, func(h *ops) {
			h.add("p1", 0, 5, acq("k", "a", 1000), granted(1))
			h.add("p1", 30, 40, renew("k", "a", 1), info())
			h.add("p2", 300, 310, acq("k", "b", 1000), granted(2))
		}},
	})
}

// A linearizability search that runs out of time checked nothing: the
// result fails (a run that reports it does not pass), says it was not
// checked, and stays marked Unknown so that a negative control can tell
// it from a violation found.
func TestRegisterTimeoutIsNoPass(t *testing.T) {
	events := simulate(sim{seed: 9, ops: 4000, procs: 10, keys: 1, lostPct: 5, infoPct: 5, refusedPct: 3})
	r := Register(events, RegisterConfig{Timeout: time.Nanosecond})
	if r.Valid || !r.Unknown {
		t.Fatalf("search timed out: valid %v, unknown %v; want not valid and unknown:\n%s", r.Valid, r.Unknown, r)
	}
	if !strings.Contains(strings.Join(r.Violations, "\n"), "linearizability not checked") {
		t.Fatalf("no violation says that linearizability was not checked:\n%s", r)
	}
	if !strings.HasPrefix(r.String(), "UNKNOWN") {
		t.Fatalf("String does not say UNKNOWN:\n%s", r)
	}
	path := filepath.Join(t.TempDir(), "results.txt")
	if err := WriteSummary(path, []Result{{Name: "other", Valid: true}, r}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "overall: FAIL") {
		t.Fatalf("summary of a run whose register check timed out:\n%s\nwant overall: FAIL", b)
	}
}

func TestRegisterCounters(t *testing.T) {
	s := bump(bump(bump("", 3, 1), 3, 1), 3, 2)
	if count(s, 0) != 0 || count(s, 1) != 2 || count(s, 2) != 1 || count("", 1) != 0 {
		t.Fatalf("counters %v", []byte(s))
	}
	if !subset("", s) || !subset(bump("", 3, 1), s) || subset(s, bump("", 3, 1)) {
		t.Fatal("subset is wrong")
	}
	a := lease{Held: true, Holder: "a", Token: 1, Floor: 1}
	b := a
	b.Fired = bump("", 2, 0)
	if got := minimal([]lease{b, a, a}); len(got) != 1 || got[0] != a {
		t.Fatalf("minimal kept %+v", got)
	}
}
