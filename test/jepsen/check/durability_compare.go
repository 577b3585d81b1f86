package check

import (
	"bytes"
	"sort"
)

// compareDurLogs reports pairs of nodes whose logs break Raft's Log
// Matching property at indexes both hold, up to the index a majority of
// nodes hold: two entries with the same index and term that differ in
// data, or any difference below an index where the two logs agree in
// term (agreement there means every earlier entry must be identical).
// Differences above the last agreeing index are left alone: they can be
// the uncommitted tail of a leader that was killed, which its successor
// legally overwrites.
func compareDurLogs(v *verdict, nodes []*durNode) {
	if len(nodes) < 2 {
		return
	}
	lasts := make([]uint64, len(nodes))
	for i, n := range nodes {
		lasts[i] = n.last
	}
	sort.Slice(lasts, func(i, j int) bool { return lasts[i] > lasts[j] })
	commit := lasts[len(lasts)/2]
	v.note("logs compared up to index %d, held by a majority of the %d readable nodes", commit, len(nodes))
	for i, a := range nodes {
		for _, b := range nodes[i+1:] {
			if a.last == 0 || b.last == 0 {
				continue
			}
			lo, hi := max(a.first, b.first), min(a.last, b.last, commit)
			at := func(idx uint64) (logEntry, logEntry) { return a.entries[idx-a.first], b.entries[idx-b.first] }
			var agree uint64 // the highest index where both hold entries of one term
			for idx := lo; idx <= hi && lo <= hi; idx++ {
				if ea, eb := at(idx); !ea.missing && !eb.missing && ea.term == eb.term {
					agree = idx
				}
			}
			var diff, first uint64
			for idx := lo; idx <= hi && lo <= hi; idx++ {
				ea, eb := at(idx)
				if ea.missing || eb.missing {
					continue
				}
				sameTermOtherData := ea.term == eb.term && !bytes.Equal(ea.data, eb.data)
				if sameTermOtherData || (idx < agree && ea.term != eb.term) {
					if diff == 0 {
						first = idx
					}
					diff++
				}
			}
			if diff > 0 {
				ea, eb := at(first)
				v.fail("nodes %s and %s disagree at committed index %d: term %d vs %d, %d vs %d data bytes (%d differing indexes up to %d)",
					a.name, b.name, first, ea.term, eb.term, len(ea.data), len(eb.data), diff, hi)
			}
		}
	}
}
