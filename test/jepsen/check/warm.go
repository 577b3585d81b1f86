package check

import (
	"sort"

	"github.com/tenure-io/tenure/test/jepsen/history"
)

// WarmHandOffs counts, over the placement workers' events, the hand-overs
// of a key from one worker that handed it back (Released) to another, and
// those of them that were warm: the new worker wrote Prepared for the key
// while the old one held it (after the old hold's Acquired, before its
// Released). A hand-over after a Lost is not counted (there was no
// hand-back); one from a worker that stopped is, as the history cannot
// tell a planned move from a worker's shutdown: the counts are a figure,
// not a verdict; mutual exclusion is Mutex's.
func WarmHandOffs(events []history.Event) (handOvers, warm int) {
	type hold struct {
		proc            string
		start, released int64
		key, holder     string
		token           uint64
	}
	holds := map[[2]string]map[uint64]*hold{}
	prepared := map[string][]history.Event{}
	for _, e := range events {
		switch e.Kind {
		case history.Prepared:
			prepared[e.Key] = append(prepared[e.Key], e)
			continue
		case history.Acquired, history.Belief, history.Released:
		default:
			continue
		}
		id := [2]string{e.Key, e.Holder}
		if holds[id] == nil {
			holds[id] = map[uint64]*hold{}
		}
		h := holds[id][e.Token]
		if h == nil {
			h = &hold{proc: e.Proc, start: e.T, key: e.Key, holder: e.Holder, token: e.Token}
			holds[id][e.Token] = h
		}
		h.start = min(h.start, e.T)
		if e.Kind == history.Released {
			h.released = e.T
		}
	}
	byKey := map[string][]*hold{}
	for _, byToken := range holds {
		for _, h := range byToken {
			byKey[h.key] = append(byKey[h.key], h)
		}
	}
	for key, hs := range byKey {
		sort.Slice(hs, func(i, j int) bool { return hs[i].token < hs[j].token })
		for i := 1; i < len(hs); i++ {
			prev, cur := hs[i-1], hs[i]
			if prev.released == 0 || prev.proc == cur.proc {
				continue
			}
			handOvers++
			for _, p := range prepared[key] {
				if p.Proc == cur.proc && p.T >= prev.start && p.T <= prev.released {
					warm++
					break
				}
			}
		}
	}
	return handOvers, warm
}
