package check

import (
	"bytes"
	"sort"
)

// compareDurLogs reports, for each pair of nodes, the committed indexes they
// both hold where the entries differ in term or data.
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
			var diff, at uint64
			for idx := lo; idx <= hi && lo <= hi; idx++ {
				ea, eb := a.entries[idx-a.first], b.entries[idx-b.first]
				if ea.missing || eb.missing {
					continue
				}
				if ea.term != eb.term || !bytes.Equal(ea.data, eb.data) {
					if diff == 0 {
						at = idx
					}
					diff++
				}
			}
			if diff > 0 {
				ea, eb := a.entries[at-a.first], b.entries[at-b.first]
				v.fail("nodes %s and %s disagree at committed index %d: term %d vs %d, %d vs %d data bytes (%d differing indexes up to %d)",
					a.name, b.name, at, ea.term, eb.term, len(ea.data), len(eb.data), diff, hi)
			}
		}
	}
}
