package check

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/tenure-io/tenure/test/jepsen/history"
)

// Fenced checks the fenced register store's log: StoreWrite events in the
// order the store applied them (the order of its history file). Violations:
//   - an accepted write whose Base is not the store's value before it
//     (Current): an update was lost, a stale holder wrote over a newer
//     one's work;
//   - accepted writes of one key whose tokens decrease: a write applied out
//     of token order.
//
// The Notes count the writes the store refused for a stale token, per key:
// fencing at work.
func Fenced(events []history.Event) Result {
	v := newVerdict("fenced register")
	t0 := firstT(events)
	last := map[string]uint64{}
	refused := map[string]int{}
	for _, e := range events {
		if e.Kind != history.StoreWrite {
			continue
		}
		v.Ops++
		if !e.Accepted {
			refused[e.Key]++
			continue
		}
		if e.Base != e.Current {
			v.fail("lost update on %s at %s: %s wrote %d under token %d from a read of %d, but the value was %d",
				e.Key, msAfter(e.T, t0), e.Proc, e.Value, e.Token, e.Base, e.Current)
		}
		if e.Token < last[e.Key] {
			v.fail("out of token order on %s at %s: %s's write under token %d applied after one under token %d",
				e.Key, msAfter(e.T, t0), e.Proc, e.Token, last[e.Key])
		}
		last[e.Key] = max(last[e.Key], e.Token)
	}
	for _, k := range slices.Sorted(maps.Keys(refused)) {
		v.note("%s: %d writes refused for a stale token", k, refused[k])
	}
	return v.done()
}

// Tokens checks that a grant of a key carries a larger token than every
// grant of that key acknowledged before it began. Grants are register
// acquires answered 201 (Created), which began at their Invoke, and the
// holders' Acquired events, which began after the same process's previous
// event (holders acquire one lease at a time). Each grant is acknowledged
// at its reply (the completion or the Acquired event). A grant that began
// after another was acknowledged must have a larger token, unless it is
// that same lease again: same holder, same token.
func Tokens(events []history.Event) Result {
	v := newVerdict("fencing tokens")
	t0 := firstT(events)
	type grant struct {
		begin, ack   int64
		proc, holder string
		token        uint64
	}
	invoked := map[string]int64{} // proc/op of register acquires → invoke time
	lastT := map[string]int64{}   // proc → its previous event
	byKey := map[string][]grant{}
	for _, e := range events {
		switch {
		case e.Kind == history.Invoke && e.F == "acquire":
			invoked[fmt.Sprintf("%s/%d", e.Proc, e.Op)] = e.T
		case e.Kind == history.OK && e.F == "acquire" && e.Created && e.Token != 0:
			begin, ok := invoked[fmt.Sprintf("%s/%d", e.Proc, e.Op)]
			if !ok {
				begin = e.T
			}
			byKey[e.Key] = append(byKey[e.Key], grant{begin: begin, ack: e.T, proc: e.Proc, holder: e.Holder, token: e.Token})
			v.Ops++
		case e.Kind == history.Acquired && e.Token != 0:
			byKey[e.Key] = append(byKey[e.Key], grant{begin: lastT[e.Proc], ack: e.T, proc: e.Proc, holder: e.Holder, token: e.Token})
			v.Ops++
		}
		lastT[e.Proc] = e.T
	}
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		gs := byKey[key]
		acked := append([]grant{}, gs...)
		sort.Slice(acked, func(i, j int) bool { return acked[i].ack < acked[j].ack })
		sort.Slice(gs, func(i, j int) bool { return gs[i].begin < gs[j].begin })
		var best grant // the largest token acknowledged before the current begin
		i := 0
		for _, g := range gs {
			for ; i < len(acked) && acked[i].ack < g.begin; i++ {
				if acked[i].token > best.token {
					best = acked[i]
				}
			}
			// The same lease handed back to its own holder (an acquire by the
			// holder that still holds it, e.g. after every server restarted)
			// keeps its token: no one else held the key in between.
			same := g.token == best.token && g.holder == best.holder
			if best.token != 0 && g.token <= best.token && !same {
				v.fail("token order on %s: %s was granted token %d after %s began, but %s had been granted %d at %s",
					key, g.proc, g.token, msAfter(g.begin, t0), best.proc, best.token, msAfter(best.ack, t0))
			}
		}
	}
	return v.done()
}

// msAfter formats t as milliseconds after t0.
func msAfter(t, t0 int64) string { return fmt.Sprintf("%.1fms", float64(t-t0)/1e6) }
