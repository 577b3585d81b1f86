package placement

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/tenure-io/tenure/fsm"
)

// loadSettings are a group's settings for placement by load.
type loadSettings struct {
	// Threshold is the imbalance that starts moves: moves happen only while
	// some worker's relative load (its load divided by its fair share) is
	// above Threshold, or below 1/Threshold; they stop as soon as every
	// worker is within [1/Threshold, Threshold]. Threshold > 1.
	Threshold float64
	// Budget is the most keys the rebalancing step may move from one
	// live owner to another in this call (0: none).
	Budget int
}

// placeByLoad computes the target owner of each key of a group so that
// the workers' loads (the sum of their keys' weights), rather than their
// key counts, are even. It starts from the previous plan, and moves at
// most s.Budget keys between live owners per call, so that a plan settles
// in a few calls and then stays put.
//
// Eligibility. A disabled key gets no owner. A key never goes to a worker
// prohibited on it, nor to a worker that already holds its hard limit of
// keys (limit, out of the enabled keys), nor, unless the worker held it in
// prev, to a stuck worker (keepOnly). A worker may take a key when none of
// these forbids it.
//
// Loads. weight(k) is key k's load; it is called once per enabled key, and
// a weight that is not a positive finite number counts as 1. A worker's
// fair share is a total weight split in proportion to the workers'
// loadCap; a worker that announced none (loadCap <= 0) counts as the mean
// of those that did, and if none did, the shares are equal. Its relative
// load is its load divided by its fair share. Stuck workers have shares
// like the others; they only cannot receive keys.
//
//  1. Keep: a key stays with prev[k] when that worker is a candidate and
//     not prohibited on it. An owner over its hard limit keeps the keys it
//     ranks highest (rankBefore); its other keys are orphans, as are the
//     keys without such an owner. Key counts are not evened out.
//  2. Place: the orphans, heaviest first and then by name, each go to the
//     highest-ranked (HRW) worker that may take it and whose load plus the
//     key's weight is at most Threshold times its share of the weight of
//     all enabled keys; failing that, to the worker that may take it with
//     the lowest (load+weight)/share, ties by rank; failing that, to none.
//     Orphans do not count against the budget.
//  3. Move: while fewer than s.Budget moves were made and some worker's
//     relative load (shares of the weight of the owned keys) is outside
//     [1/Threshold, Threshold], one key moves. Sources are tried from the
//     highest relative load down, and for each, destinations from the
//     lowest up (ties by id). Key k of weight w may move from src to dst
//     only if dst may take it and the move lowers the pair's larger
//     relative load: max(rel(src)-w/share(src), rel(dst)+w/share(dst)) <
//     rel(src), by a margin (moveMargin) far above rounding, and only if
//     src is above Threshold or dst below 1/Threshold (two workers within
//     bounds never trade keys). The first
//     pair with such a key moves the one that makes that maximum least,
//     ties by dst's rank for it, then by name.
//
// moved is the number of moves of step 3; it is at most s.Budget. Each
// move replaces the pair's larger relative load by two smaller ones, so
// the relative loads sorted in decreasing order decrease lexicographically
// and moves never cycle. A plan with every relative load within the
// bounds is left alone: a change of weights inside the band moves nothing.
//
// Fixed point: if a call moved fewer than s.Budget keys and left no
// enabled key without an owner, placing again from its plan with the same
// other inputs returns the same plan with moved == 0.
//
// The result is a pure function of the inputs. It depends on keys only as
// a set, and on workers only as a set of ids: a repeated id counts once,
// with the fields of its first entry, so the order of workers matters
// only when an id is repeated with different fields.
func placeByLoad(keys []string, workers []candidate, maxPerWorker int, prev map[string]string,
	control func(string) fsm.KeyControl, weight func(key string) float64, s loadSettings) (plan map[string]string, moved int) {
	p := newLoadPlanner(keys, workers, maxPerWorker, control, weight)
	plan = make(map[string]string, len(p.keys))
	if len(p.ws) == 0 || len(p.keys) == 0 {
		return plan, 0
	}
	p.placeOrphans(p.keep(prev), s.Threshold)
	moved = p.rebalance(s)
	for i, w := range p.ws {
		for _, j := range p.lists[i] {
			plan[p.keys[j]] = w.id
		}
	}
	return plan, moved
}

// loadPlanner is the state of one placeByLoad call. Keys and workers are
// numbered by position in sorted order: keys j index keys, ctl and wt;
// workers i index ws, seeds, hard, lists, load and minW.
type loadPlanner struct {
	keys []string // the enabled keys, sorted, unique
	ctl  []fsm.KeyControl
	wt   []float64

	ws    []candidate // unique ids, sorted
	seeds []uint64    // workerSeed of each worker
	hard  []int       // limit of each worker
	lists [][]int     // keys of each worker, ascending
	load  []float64   // sum of wt over lists, in list order
	minW  []float64   // least weight in lists, +Inf when empty
}

func newLoadPlanner(keys []string, workers []candidate, maxPerWorker int,
	control func(string) fsm.KeyControl, weight func(string) float64) *loadPlanner {
	p := &loadPlanner{}
	sorted := slices.Compact(slices.Sorted(slices.Values(keys)))
	for _, k := range sorted {
		if c := control(k); !c.Disabled {
			w := weight(k)
			if !finitePositive(w) {
				w = 1
			}
			p.keys, p.ctl, p.wt = append(p.keys, k), append(p.ctl, c), append(p.wt, w)
		}
	}
	seen := make(map[string]bool, len(workers))
	for _, w := range workers {
		if !seen[w.id] {
			seen[w.id] = true
			p.ws = append(p.ws, w)
		}
	}
	slices.SortFunc(p.ws, func(a, b candidate) int { return strings.Compare(a.id, b.id) })
	n := len(p.ws)
	p.seeds, p.hard = make([]uint64, n), make([]int, n)
	p.lists, p.load, p.minW = make([][]int, n), make([]float64, n), make([]float64, n)
	for i, w := range p.ws {
		p.seeds[i], p.hard[i] = workerSeed(w.id), limit(w, len(p.keys), maxPerWorker)
	}
	return p
}

func finitePositive(x float64) bool { return x > 0 && !math.IsInf(x, 1) }

// keep is step 1: it gives each key its previous owner where it may stay
// and returns the others (orphans).
func (p *loadPlanner) keep(prev map[string]string) []int {
	slot := make(map[string]int, len(p.ws))
	for i, w := range p.ws {
		slot[w.id] = i
	}
	var orphans []int
	for j, k := range p.keys {
		id, had := prev[k]
		if i, ok := slot[id]; had && ok && !p.prohibited(j, i) {
			p.lists[i] = append(p.lists[i], j) // ascending: j ascends
		} else {
			orphans = append(orphans, j)
		}
	}
	for i, ks := range p.lists {
		if len(ks) <= p.hard[i] {
			continue
		}
		// By rank, as rankBefore orders them (j order is name order).
		slices.SortFunc(ks, func(a, b int) int {
			return cmp.Or(cmp.Compare(keyScore(p.seeds[i], p.keys[b]), keyScore(p.seeds[i], p.keys[a])), a-b)
		})
		orphans = append(orphans, ks[p.hard[i]:]...)
		p.lists[i] = slices.Sorted(slices.Values(ks[:p.hard[i]]))
	}
	for i := range p.lists {
		p.refresh(i)
	}
	return orphans
}

// placeOrphans is step 2.
func (p *loadPlanner) placeOrphans(orphans []int, threshold float64) {
	slices.SortFunc(orphans, func(a, b int) int { return cmp.Or(cmp.Compare(p.wt[b], p.wt[a]), a-b) })
	var total float64
	for _, w := range p.wt {
		total += w
	}
	share := p.shares(total)
	for _, j := range orphans {
		w := p.wt[j]
		fit, low := -1, -1
		var fitScore, lowScore uint64
		var lowRel float64
		for i := range p.ws { // in id order, so the strict > prefers the lower id on a tie
			if !p.mayTake(i, j) {
				continue
			}
			score := keyScore(p.seeds[i], p.keys[j])
			if p.load[i]+w <= threshold*share[i] && (fit < 0 || score > fitScore) {
				fit, fitScore = i, score
			}
			if r := (p.load[i] + w) / share[i]; low < 0 || r < lowRel || (r == lowRel && score > lowScore) {
				low, lowRel, lowScore = i, r, score
			}
		}
		to := fit
		if to < 0 {
			to = low
		}
		if to < 0 {
			continue
		}
		p.lists[to] = append(p.lists[to], j)
		p.load[to] += w
	}
	for i := range p.lists {
		slices.Sort(p.lists[i])
		p.refresh(i)
	}
}

// rebalance is step 3: it makes at most s.Budget moves and returns how
// many it made.
func (p *loadPlanner) rebalance(s loadSettings) int {
	share := p.ownedShares()
	if share == nil {
		return 0
	}
	n := len(p.ws)
	rel := make([]float64, n)
	srcs, dsts := make([]int, n), make([]int, n)
	for i := range srcs {
		srcs[i], dsts[i] = i, i
	}
	moved := 0
	for moved < s.Budget {
		out := false
		for i := range rel {
			rel[i] = p.load[i] / share[i]
			out = out || rel[i] > s.Threshold || rel[i] < 1/s.Threshold
		}
		if !out {
			break
		}
		slices.SortFunc(srcs, func(a, b int) int { return cmp.Or(cmp.Compare(rel[b], rel[a]), a-b) })
		slices.SortFunc(dsts, func(a, b int) int { return cmp.Or(cmp.Compare(rel[a], rel[b]), a-b) })
		src, dst, j := p.bestMove(srcs, dsts, rel, share, s.Threshold)
		if j < 0 {
			break
		}
		k, _ := slices.BinarySearch(p.lists[src], j)
		p.lists[src] = slices.Delete(p.lists[src], k, k+1)
		k, _ = slices.BinarySearch(p.lists[dst], j)
		p.lists[dst] = slices.Insert(p.lists[dst], k, j)
		p.refresh(src)
		p.refresh(dst)
		moved++
	}
	return moved
}

// ownedShares is each worker's fair share of the weight of the owned
// keys, or nil when no key with weight is owned. The total is summed in
// key order: the next call, from the same plan, sums the same keys in the
// same order.
func (p *loadPlanner) ownedShares() []float64 {
	owned := make([]bool, len(p.keys))
	for _, ks := range p.lists {
		for _, j := range ks {
			owned[j] = true
		}
	}
	var total float64
	for j, w := range p.wt {
		if owned[j] {
			total += w
		}
	}
	if total == 0 {
		return nil
	}
	return p.shares(total)
}

// moveMargin is how much a move must lower the larger relative load of
// its pair, relative to it: far more than the rounding of a sum of
// weights, so that rounding cannot let two moves undo each other.
const moveMargin = 1e-9

// bestMove returns the move of step 3 (source, destination and key), or
// -1s when no move is allowed. A move touches a worker out of bounds: its
// source is above threshold, or its destination below 1/threshold. Two
// workers within bounds never trade keys, even while a third is out of
// bounds for good (one key heavier than its share, say).
func (p *loadPlanner) bestMove(srcs, dsts []int, rel, share []float64, threshold float64) (src, dst, key int) {
	for _, a := range srcs {
		for _, b := range dsts {
			if rel[b] >= rel[a] || rel[a] <= threshold && rel[b] >= 1/threshold {
				break // so are the rest
			}
			// rel[b]+w/share[b] grows with w: if the lightest key of a
			// does not fit, none does.
			below := rel[a] * (1 - moveMargin)
			if p.ws[b].keepOnly || len(p.lists[b]) >= p.hard[b] || rel[b]+p.minW[a]/share[b] >= below {
				continue
			}
			best, bestMax, bestScore := -1, 0.0, uint64(0)
			for _, j := range p.lists[a] { // ascending, so the strict < prefers the lower name
				w := p.wt[j]
				m := max(rel[a]-w/share[a], rel[b]+w/share[b])
				if m >= below || p.prohibited(j, b) {
					continue
				}
				score := keyScore(p.seeds[b], p.keys[j])
				if best < 0 || m < bestMax || (m == bestMax && score > bestScore) {
					best, bestMax, bestScore = j, m, score
				}
			}
			if best >= 0 {
				return a, b, best
			}
		}
	}
	return -1, -1, -1
}

// shares splits total over the workers in proportion to their loadCap.
func (p *loadPlanner) shares(total float64) []float64 {
	var sum float64
	announced := 0
	for _, w := range p.ws {
		if finitePositive(w.loadCap) {
			sum += w.loadCap
			announced++
		}
	}
	mean := 1.0
	if announced > 0 {
		mean = sum / float64(announced)
	}
	out := make([]float64, len(p.ws))
	var all float64
	for i, w := range p.ws {
		out[i] = mean
		if finitePositive(w.loadCap) {
			out[i] = w.loadCap
		}
		all += out[i]
	}
	for i := range out {
		out[i] = total * out[i] / all
	}
	return out
}

// mayTake reports whether worker i may be given key j, which it does not
// hold.
func (p *loadPlanner) mayTake(i, j int) bool {
	return !p.ws[i].keepOnly && len(p.lists[i]) < p.hard[i] && !p.prohibited(j, i)
}

func (p *loadPlanner) prohibited(j, i int) bool {
	return len(p.ctl[j].Prohibited) > 0 && p.ctl[j].Prohibits(p.ws[i].id)
}

// refresh recomputes the load and least weight of worker i from its list,
// in list order, so that a worker's load depends only on its keys.
func (p *loadPlanner) refresh(i int) {
	p.load[i], p.minW[i] = 0, math.Inf(1)
	for _, j := range p.lists[i] {
		p.load[i] += p.wt[j]
		p.minW[i] = min(p.minW[i], p.wt[j])
	}
}
