package check

import (
	"sort"
	"strings"
	"time"
)

// StatusSample is one server's answer to GET /v1/status.
type StatusSample struct {
	T      int64  // CLOCK_MONOTONIC ns when the answer arrived
	Node   string // the server
	State  string // leader, follower, candidate (any case)
	Term   uint64
	Leader string // the leader it knows
}

// Terms checks that at most one server reported itself leader in any one
// term.
func Terms(samples []StatusSample) Result {
	v := newVerdict("one leader per term")
	leaders := map[uint64]map[string]bool{}
	for _, s := range samples {
		v.Ops++
		if !strings.EqualFold(s.State, "leader") {
			continue
		}
		if leaders[s.Term] == nil {
			leaders[s.Term] = map[string]bool{}
		}
		leaders[s.Term][s.Node] = true
	}
	terms := make([]uint64, 0, len(leaders))
	for t := range leaders {
		terms = append(terms, t)
	}
	sort.Slice(terms, func(i, j int) bool { return terms[i] < terms[j] })
	for _, t := range terms {
		if len(leaders[t]) > 1 {
			var nodes []string
			for n := range leaders[t] {
				nodes = append(nodes, n)
			}
			sort.Strings(nodes)
			v.fail("term %d has %d leaders: %s", t, len(nodes), strings.Join(nodes, ", "))
		}
	}
	v.note("%d terms had a leader", len(terms))
	return v.done()
}

// Placement checks the end of a run, after healing: every key of the group
// is owned by exactly one worker, that worker is alive, and the cluster's
// lease of the key is held by that same worker. owners maps a worker id to
// the keys it reports running; leases maps a key to the worker id holding
// its lease ("" when free).
func Placement(keys []string, owners map[string][]string, leases map[string]string, alive []string) Result {
	v := newVerdict("placement")
	live := map[string]bool{}
	for _, a := range alive {
		live[a] = true
	}
	ownedBy := map[string][]string{}
	for w, ks := range owners {
		for _, k := range ks {
			ownedBy[k] = append(ownedBy[k], w)
		}
	}
	for _, k := range keys {
		v.Ops++
		ws := ownedBy[k]
		sort.Strings(ws)
		switch {
		case len(ws) == 0:
			v.fail("%s has no owner (lease holder %q)", k, leases[k])
		case len(ws) > 1:
			v.fail("%s is owned by %d workers: %s", k, len(ws), strings.Join(ws, ", "))
		case !live[ws[0]]:
			v.fail("%s is owned by %s, which is not alive", k, ws[0])
		case leases[k] != ws[0]:
			v.fail("%s is run by %s but its lease is held by %q", k, ws[0], leases[k])
		}
	}
	return v.done()
}

// Recovery checks that a workload succeeded again within bound of the
// moment every fault was undone (healedAt); firstOK is the CLOCK_MONOTONIC
// time of its first success after that, 0 if none was seen.
func Recovery(name string, healedAt, firstOK int64, bound time.Duration) Result {
	v := newVerdict(name)
	v.Ops = 1
	switch took := time.Duration(firstOK - healedAt); {
	case firstOK == 0:
		v.fail("no success after healing (bound %v)", bound)
	case took > bound:
		v.fail("first success %v after healing, above the bound %v", took.Round(time.Millisecond), bound)
	default:
		v.note("first success %v after healing (bound %v)", took.Round(time.Millisecond), bound)
	}
	return v.done()
}
