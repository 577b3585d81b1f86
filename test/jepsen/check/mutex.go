package check

import (
	"maps"
	"slices"
	"sort"

	"github.com/tenure-io/tenure/test/jepsen/history"
)

// MutexConfig tunes Mutex.
type MutexConfig struct {
	// Name names the result, e.g. "mutex" or "election"; a default is
	// used when empty.
	Name string
}

// holdID identifies one hold: a grant of a key to a holder under a token.
type holdID struct {
	Key    string
	Holder string
	Token  uint64
}

// hold is what the holder events of one holdID say.
type hold struct {
	id       holdID
	proc     string
	acquired int64 // T of the first Acquired; 0 if none was written
	first    int64 // T of the first event
	deadline int64 // the latest Deadline reported
	released int64 // T of the first Released; 0 if none
	belief   int64 // T of the last Belief; 0 if none
}

// start is when the holder learnt of the hold.
func (h *hold) start() int64 {
	if h.acquired != 0 {
		return h.acquired
	}
	return h.first
}

// end is the last moment the holder may have acted under the hold: its
// latest deadline, cut at its release, or its last Belief if later.
func (h *hold) end() int64 {
	end := h.deadline
	if h.released != 0 && (end == 0 || h.released < end) {
		end = h.released
	}
	if end == 0 {
		end = h.start()
	}
	return max(end, h.belief)
}

// live reports whether the holder could act at all under the hold. A
// reply that arrived after its own deadline (a paused or slow client)
// yields an empty interval.
func (h *hold) live() bool { return h.end() > h.start() }

// Mutex checks real-time mutual exclusion over the holder events
// (Acquired, Renewed, Belief, Lost, Released) of the mutex, election and
// placement workers. Other kinds are ignored.
//
// A hold is one (Key, Holder, Token). Its interval runs from the T of its
// first Acquired (or of its first event, if none was written) to the
// later of (a) the latest Deadline any of its events reported, capped at
// the T of its Released (a Lost does not cap it), and (b) the T of its
// last Belief. Violations:
//
//   - two holds of one key with different holders or tokens whose
//     intervals overlap;
//   - a Belief after the deadline known then: its own Deadline, or, when
//     it carries none, the latest Deadline of the hold's earlier events
//     (a Belief may carry a deadline from a renewal whose Renewed event is
//     written just after it, so its own Deadline is what the holder knew);
//   - tokens of successive holds of one key, ordered by start, that do
//     not strictly increase. Holds whose reply came after their own
//     deadline are left out of this order (their start says nothing
//     about when they were granted) and counted in a Note.
func Mutex(events []history.Event, cfg MutexConfig) Result {
	name := cfg.Name
	if name == "" {
		name = "mutual exclusion"
	}
	v := newVerdict(name)
	clk := clock{t0: firstT(events)}
	ordered := append([]history.Event(nil), events...)
	sort.SliceStable(ordered, func(i, j int) bool { return ordered[i].T < ordered[j].T })
	holds := map[holdID]*hold{}
	noDeadline := 0
	for _, e := range ordered {
		switch e.Kind {
		case history.Acquired, history.Renewed, history.Belief, history.Lost, history.Released:
		default:
			continue
		}
		v.Ops++
		id := holdID{e.Key, e.Holder, e.Token}
		h := holds[id]
		if h == nil {
			h = &hold{id: id, proc: e.Proc, first: e.T}
			holds[id] = h
		}
		switch e.Kind {
		case history.Acquired:
			if h.acquired == 0 {
				h.acquired = e.T
			}
		case history.Released:
			if h.released == 0 {
				h.released = e.T
			}
		case history.Belief:
			known := e.Deadline
			if known == 0 {
				known = h.deadline
			}
			switch {
			case known == 0:
				noDeadline++
			case e.T > known:
				v.fail("%s acted after its local deadline: Belief at %s, deadline %s (%s late), key %q holder %s token %d",
					e.Proc, clk.ms(e.T), clk.ms(known), dur(e.T-known), id.Key, id.Holder, id.Token)
			}
			h.belief = e.T
		}
		h.deadline = max(h.deadline, e.Deadline)
	}
	if noDeadline > 0 {
		v.note("%d Belief events without any known deadline", noDeadline)
	}
	byKey := map[string][]*hold{}
	for _, h := range holds {
		byKey[h.id.Key] = append(byKey[h.id.Key], h)
	}
	dead := 0
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		hs := byKey[k]
		sort.Slice(hs, func(i, j int) bool {
			if hs[i].start() != hs[j].start() {
				return hs[i].start() < hs[j].start()
			}
			return hs[i].id.Token < hs[j].id.Token
		})
		checkOverlaps(v, clk, hs)
		var prev *hold
		for _, h := range hs {
			if !h.live() {
				dead++
				continue
			}
			if prev != nil && h.id.Token <= prev.id.Token {
				v.fail("key %q: token %d (%s, %s, from %s) follows token %d (%s, %s, from %s): tokens must increase",
					k, h.id.Token, h.proc, h.id.Holder, clk.ms(h.start()),
					prev.id.Token, prev.proc, prev.id.Holder, clk.ms(prev.start()))
			}
			prev = h
		}
	}
	v.note("%d holds on %d keys", len(holds), len(byKey))
	if dead > 0 {
		v.note("%d holds whose reply arrived after their own deadline", dead)
	}
	return v.done()
}

// checkOverlaps reports every pair of holds in hs (sorted by start) whose
// intervals overlap.
func checkOverlaps(v *verdict, clk clock, hs []*hold) {
	for i, a := range hs {
		for _, b := range hs[i+1:] {
			if b.start() >= a.end() {
				continue
			}
			if a.start() >= b.end() {
				continue
			}
			v.fail("key %q: holds overlap: %s (%s, token %d) [%s, %s] and %s (%s, token %d) [%s, %s]",
				a.id.Key, a.proc, a.id.Holder, a.id.Token, clk.ms(a.start()), clk.ms(a.end()),
				b.proc, b.id.Holder, b.id.Token, clk.ms(b.start()), clk.ms(b.end()))
		}
	}
}
