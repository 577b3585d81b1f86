package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/test/jepsen/history"
)

// The checks of this file are what the workload test asks of each
// history: that it is well-formed, and, since that run has no faults,
// that nothing in it contradicts mutual exclusion. They are not the
// suite's checkers.

// checkRegister checks a register history of procs processes named
// name-0 … name-(procs-1): each invoke is followed by its completion
// before the process's next invoke, with the same F and Key; Op and T
// grow; successful answers carry what they must; and a new grant (201)
// that completed before another began got a lower token (tokens are
// cluster-wide and grow; a 200 returns the token the holder already had). It returns the count of completions per F and
// kind ("acquire/ok").
func checkRegister(t *testing.T, evs []history.Event, name string, procs int) map[string]int {
	t.Helper()
	type grant struct{ invoked, completed int64 }
	counts := map[string]int{}
	open := map[string]*history.Event{}
	lastOp, lastT := map[string]int64{}, map[string]int64{}
	var grants []grant
	tokens := map[grant]uint64{}
	for i, e := range evs {
		where := fmt.Sprintf("event %d %+v", i, e)
		if !strings.HasPrefix(e.Proc, name+"-") || e.T <= 0 || e.T < lastT[e.Proc] {
			t.Errorf("%s: bad proc or time", where)
		}
		lastT[e.Proc] = e.T
		if !slices.Contains([]string{fAcquire, fRenew, fRelease, fRead}, e.F) || e.Key == "" {
			t.Errorf("%s: bad f or key", where)
		}
		if e.Kind == history.Invoke {
			if open[e.Proc] != nil || e.Op <= lastOp[e.Proc] || e.Holder != e.Proc {
				t.Errorf("%s: invoke while op %v is open, or op not increasing, or holder not the proc", where, open[e.Proc])
			}
			lastOp[e.Proc] = e.Op
			open[e.Proc] = &evs[i]
			continue
		}
		inv := open[e.Proc]
		if inv == nil || inv.Op != e.Op || inv.F != e.F || inv.Key != e.Key {
			t.Errorf("%s: completion without its invoke (open: %+v)", where, inv)
			continue
		}
		open[e.Proc] = nil
		switch e.Kind {
		case history.OK, history.Fail, history.Info:
		default:
			t.Errorf("%s: bad kind", where)
		}
		counts[e.F+"/"+e.Kind]++
		if e.F == fAcquire && e.Kind == history.OK {
			if e.Token == 0 || e.Holder != e.Proc {
				t.Errorf("%s: acquire ok without token or with another holder", where)
			}
			if !e.Created {
				continue // the lease the holder already had: an older token
			}
			g := grant{inv.T, e.T}
			grants = append(grants, g)
			tokens[g] = e.Token
		}
		if e.F == fRead && e.Kind == history.OK && e.State != "held" && e.State != "free" {
			t.Errorf("%s: read without a state", where)
		}
	}
	for p, inv := range open {
		if inv != nil {
			t.Errorf("%s: op %d never completed after a clean stop", p, inv.Op)
		}
	}
	for _, a := range grants {
		for _, b := range grants {
			if a.completed < b.invoked && tokens[a] > tokens[b] {
				t.Errorf("acquire %v got token %d, above token %d of acquire %v that began after it ended", a, tokens[a], tokens[b], b)
			}
		}
	}
	if len(lastOp) != procs {
		t.Errorf("%d processes issued operations, want %d", len(lastOp), procs)
	}
	return counts
}

// leaseRun is what the holder events say of one lease.
type leaseRun struct {
	proc, key, holder string
	token             uint64
	acquired          int64 // T of Acquired; 0 if missing
	lastBelief        int64
	end               int64 // T of Lost or Released; 0 if none
	beliefs           int
}

// checkHolder checks the holder events of process proc: kinds, holders
// "<proc>#…", tokens, a Deadline after T on every Acquired, Renewed and
// Belief when withDeadline, every lease starting with Acquired and
// believed in only before it ended. It returns the leases it saw.
func checkHolder(t *testing.T, evs []history.Event, proc string, withDeadline bool) []*leaseRun {
	t.Helper()
	runs := map[uint64]*leaseRun{}
	var out []*leaseRun
	for i, e := range evs {
		where := fmt.Sprintf("%s event %d %+v", proc, i, e)
		if e.Proc != proc || !strings.HasPrefix(e.Holder, proc+"#") || e.Token == 0 || e.Key == "" || e.T <= 0 {
			t.Errorf("%s: bad proc, holder, token, key or time", where)
			continue
		}
		r := runs[e.Token]
		if r == nil {
			if e.Kind != history.Acquired {
				t.Errorf("%s: the first event of token %d is not acquired", where, e.Token)
			}
			r = &leaseRun{proc: proc, key: e.Key, holder: e.Holder, token: e.Token}
			runs[e.Token] = r
			out = append(out, r)
		}
		if e.Key != r.key || e.Holder != r.holder {
			t.Errorf("%s: key or holder differ from the lease's first event", where)
		}
		needDeadline := withDeadline && (e.Kind == history.Acquired || e.Kind == history.Renewed || e.Kind == history.Belief)
		if needDeadline && e.Deadline <= e.T {
			t.Errorf("%s: deadline not after T", where)
		}
		switch e.Kind {
		case history.Acquired:
			r.acquired = e.T
		case history.Renewed:
		case history.Belief:
			r.beliefs++
			r.lastBelief = max(r.lastBelief, e.T)
		case history.Lost, history.Released:
			if r.end != 0 {
				t.Errorf("%s: a second end of token %d", where, e.Token)
			}
			r.end = e.T
		default:
			t.Errorf("%s: bad kind", where)
		}
	}
	for _, r := range out {
		if r.end != 0 && r.lastBelief > r.end {
			t.Errorf("%s token %d: believed at %d, after it ended at %d", proc, r.token, r.lastBelief, r.end)
		}
	}
	return out
}

// checkExclusive checks that, per key, every belief in a lease came before
// the next lease (a higher token) of the key was acquired.
func checkExclusive(t *testing.T, runs []*leaseRun) {
	t.Helper()
	byKey := map[string][]*leaseRun{}
	for _, r := range runs {
		byKey[r.key] = append(byKey[r.key], r)
	}
	for key, rs := range byKey {
		slices.SortFunc(rs, func(a, b *leaseRun) int { return cmp.Compare(a.token, b.token) })
		for i := 1; i < len(rs); i++ {
			a, b := rs[i-1], rs[i]
			if a.lastBelief != 0 && b.acquired != 0 && a.lastBelief >= b.acquired {
				t.Errorf("%s: %s believed in token %d at %d, after %s acquired token %d at %d",
					key, a.holder, a.token, a.lastBelief, b.holder, b.token, b.acquired)
			}
		}
	}
}

// checkStore replays a store history: each read and write saw the state
// the events before it left, and with fencing a write was accepted exactly
// when its token was not below the key's highest. It returns the accepted
// writes and those whose base was not the current value (lost updates).
func checkStore(t *testing.T, evs []history.Event, fence bool, writers []string) (accepted, lost int) {
	t.Helper()
	value, highest := map[string]int64{}, map[string]uint64{}
	for i, e := range evs {
		where := fmt.Sprintf("store event %d %+v", i, e)
		if !slices.ContainsFunc(writers, func(w string) bool { return strings.HasPrefix(e.Proc, w+"#") }) {
			t.Errorf("%s: unknown writer", where)
		}
		switch e.Kind {
		case history.StoreRead:
			want := !fence || e.Token == 0 || e.Token >= highest[e.Key]
			if e.Value != value[e.Key] || e.Accepted != want {
				t.Errorf("%s: read does not match the replay (%d, %d)", where, value[e.Key], highest[e.Key])
			}
			if e.Accepted {
				highest[e.Key] = max(highest[e.Key], e.Token)
			}
		case history.StoreWrite:
			want := !fence || e.Token >= highest[e.Key]
			if e.Current != value[e.Key] || e.Accepted != want || e.Token == 0 {
				t.Errorf("%s: write does not match the replay (current %d, highest %d)", where, value[e.Key], highest[e.Key])
			}
			if e.Accepted {
				accepted++
				if e.Base != e.Current {
					lost++
				}
				value[e.Key], highest[e.Key] = e.Value, max(highest[e.Key], e.Token)
			}
		default:
			t.Errorf("%s: bad kind", where)
		}
	}
	return accepted, lost
}
