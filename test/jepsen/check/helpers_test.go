package check

import (
	"sort"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/test/jepsen/history"
)

// base is an arbitrary CLOCK_MONOTONIC origin for synthetic histories.
const base = int64(1_000_000_000_000)

// ms converts milliseconds after base to a CLOCK_MONOTONIC time.
func ms(t float64) int64 { return base + int64(t*1e6) }

// msDur converts milliseconds to nanoseconds.
func msDur(d float64) int64 { return int64(d * 1e6) }

// ops builds a register history.
type ops struct{ events []history.Event }

// noReply is the completion time of an operation that never completed.
const noReply = -1.0

// add records one operation of proc from invoke to completion (noReply: no
// completion event). in carries F, Key, Holder, Token, TTL; out the
// completion's Kind and fields.
func (h *ops) add(proc string, from, to float64, in, out history.Event) {
	op := int64(len(h.events) + 1)
	in.Kind, in.Proc, in.Op, in.T = history.Invoke, proc, op, ms(from)
	h.events = append(h.events, in)
	if to == noReply {
		return
	}
	out.Proc, out.Op, out.T = proc, op, ms(to)
	h.events = append(h.events, out)
}

// sorted returns the events ordered by T, as a history file would be.
func (h *ops) sorted() []history.Event {
	out := append([]history.Event(nil), h.events...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].T < out[j].T })
	return out
}

func acq(key, holder string, ttl float64) history.Event {
	return history.Event{F: "acquire", Key: key, Holder: holder, TTL: msDur(ttl)}
}

func renew(key, holder string, token uint64) history.Event {
	return history.Event{F: "renew", Key: key, Holder: holder, Token: token}
}

func rel(key, holder string, token uint64) history.Event {
	return history.Event{F: "release", Key: key, Holder: holder, Token: token}
}

func read(key string) history.Event { return history.Event{F: "read", Key: key} }

func granted(token uint64) history.Event {
	return history.Event{Kind: history.OK, Token: token, Created: true}
}

func kept(token uint64) history.Event { return history.Event{Kind: history.OK, Token: token} }

func ok() history.Event { return history.Event{Kind: history.OK} }

func info() history.Event { return history.Event{Kind: history.Info} }

func fail(err string) history.Event { return history.Event{Kind: history.Fail, Err: err} }

func heldBy(holder string, token uint64) history.Event {
	return history.Event{Kind: history.Fail, Err: "held", Holder: holder, Token: token}
}

func lost(reason string) history.Event {
	return history.Event{Kind: history.Fail, Err: "lease_lost", State: reason}
}

func shows(state, holder string, token uint64) history.Event {
	return history.Event{Kind: history.OK, State: state, Holder: holder, Token: token}
}

// wantValid fails the test unless r is valid and decided.
func wantValid(t *testing.T, r Result) {
	t.Helper()
	if !r.Valid || r.Unknown {
		t.Fatalf("want valid, got:\n%s", r)
	}
}

// wantViolation fails the test unless r is invalid with a violation that
// mentions every one of subs.
func wantViolation(t *testing.T, r Result, subs ...string) {
	t.Helper()
	if r.Valid {
		t.Fatalf("want a violation, got:\n%s", r)
	}
	for _, v := range r.Violations {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(v, s)
		}
		if all {
			return
		}
	}
	t.Fatalf("no violation mentions %q:\n%s", subs, r)
}
