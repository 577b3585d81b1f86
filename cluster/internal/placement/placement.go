package placement

import (
	"maps"
	"sort"

	"github.com/tenure-io/tenure/fsm"
)

// candidate is a worker that may own keys of a group: alive, a member of
// the group, and not draining.
type candidate struct {
	id string
	// capacity is the most keys the worker accepts; 0 means no limit.
	capacity int
	// keepOnly: the worker is stuck; it may keep keys of the previous
	// plan but is given no other key.
	keepOnly bool
	// loadCap is the worker's capacity in the group's load unit, as it
	// announced; 0 when it announced none. Only placeByLoad reads it.
	loadCap float64
}

// placementScore is the rendezvous (HRW) weight of worker for key: the
// worker with the highest weight is the key's first choice. It must never
// change: a new function would move every key (TestPlacementScorePinned).
//
// It is 64-bit FNV-1a over worker, a zero byte and key, then MurmurHash3's
// fmix64, which spreads FNV's weak low bits. FNV-1a reads its input in
// order, so the part over worker and the zero byte (workerSeed) is computed
// once per worker when one key is weighed against many workers.
func placementScore(worker, key string) uint64 {
	return keyScore(workerSeed(worker), key)
}

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// workerSeed is the FNV-1a state after worker and a zero byte.
func workerSeed(worker string) uint64 {
	h := uint64(fnvOffset64)
	for i := 0; i < len(worker); i++ {
		h ^= uint64(worker[i])
		h *= fnvPrime64
	}
	return h * fnvPrime64 // the zero byte: h ^= 0, then multiply
}

// keyScore finishes placementScore from the worker's seed.
func keyScore(seed uint64, key string) uint64 {
	x := seed
	for i := 0; i < len(key); i++ {
		x ^= uint64(key[i])
		x *= fnvPrime64
	}
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// place computes the target owner of each key of a group: bounded-load
// rendezvous hashing that starts from the previous plan.
//
//  1. Quotas: the enabled keys are split as evenly as the workers' limits
//     (capacity, maxPerWorker) allow, so that no two unconstrained workers
//     differ by more than one key.
//  2. Keep: a key stays with its previous owner if that owner may still
//     hold it, up to the owner's quota; an owner over its quota keeps the
//     keys it ranks highest.
//  3. Place: every other key goes to the highest-ranked worker (HRW) with
//     room that is not prohibited on it and not stuck (keepOnly).
//
// So a worker that joins takes about 1/N of the keys (those its quota
// frees), and a worker that leaves moves only its own keys. Disabled keys
// get no owner; a key no worker may take has none either. The result is a
// pure function of its inputs.
//
// The plan is iterated to a fixed point (placing again from it changes
// nothing), so the balancer does not write a new plan at every check.
func place(keys []string, workers []candidate, maxPerWorker int, prev map[string]string, control func(string) fsm.KeyControl) map[string]string {
	plan := placeOnce(keys, workers, maxPerWorker, prev, control)
	for i := 0; i < 8; i++ {
		next := placeOnce(keys, workers, maxPerWorker, plan, control)
		if maps.Equal(next, plan) {
			break
		}
		plan = next
	}
	return plan
}

// placeOnce is one round of place.
//
// Workers are weighed by position (slot) rather than by id in maps: a
// group of 10,000 keys over 1,000 workers weighs up to ten million pairs.
func placeOnce(keys []string, workers []candidate, maxPerWorker int, prev map[string]string, control func(string) fsm.KeyControl) map[string]string {
	out := make(map[string]string, len(keys))
	var enabled []string
	for _, k := range keys {
		if !control(k).Disabled {
			enabled = append(enabled, k)
		}
	}
	if len(workers) == 0 || len(enabled) == 0 {
		return out
	}
	quota := quotas(len(enabled), workers, maxPerWorker)
	// slotOf numbers the worker ids; a repeated id shares its first slot,
	// as it shares one entry of quota.
	slotOf := make(map[string]int, len(workers))
	slots := make([]int, len(workers))
	seeds := make([]uint64, len(workers))
	for i, w := range workers {
		s, ok := slotOf[w.id]
		if !ok {
			s = i
			slotOf[w.id] = s
		}
		slots[i], seeds[i] = s, workerSeed(w.id)
	}
	quotaAt := make([]int, len(workers))
	hardAt := make([]int, len(workers))
	load := make([]int, len(workers))
	for i, w := range workers {
		quotaAt[slots[i]] = quota[w.id]
		hardAt[slots[i]] = limit(w, len(enabled), maxPerWorker)
	}
	var left []string

	// Keep what may stay, best-ranked first within each owner.
	kept := make(map[string][]string)
	var pool []string
	for _, k := range enabled {
		w := prev[k]
		if _, ok := quota[w]; ok && !control(k).Prohibits(w) {
			kept[w] = append(kept[w], k)
		} else {
			pool = append(pool, k)
		}
	}
	for w, ks := range kept {
		sort.Slice(ks, func(i, j int) bool { return rankBefore(w, ks[i], ks[j]) })
		n := min(len(ks), quota[w])
		for _, k := range ks[:n] {
			out[k] = w
		}
		load[slotOf[w]] = n
		pool = append(pool, ks[n:]...)
	}
	sort.Strings(pool)

	// Place the rest by rendezvous rank.
	for _, k := range pool {
		ctl := control(k)
		best := bestWorker(workers, seeds, k, func(i int) bool {
			s := slots[i]
			return !workers[i].keepOnly && load[s] < quotaAt[s] && !ctl.Prohibits(workers[i].id)
		})
		if best < 0 {
			left = append(left, k)
			continue
		}
		out[k] = workers[best].id
		load[slots[best]]++
	}

	// Repair: quotas are a target for evenness, not a hard limit. A key
	// that found no room within quota (its ranked workers are prohibited
	// on it or full) goes to the first worker in rank that is under its
	// hard limit (capacity, max per worker), so no key stays unowned while
	// a worker may take it.
	for _, k := range left {
		ctl := control(k)
		// The previous owner first, so that the repair is sticky too.
		if w := prev[k]; !ctl.Prohibits(w) {
			if s, ok := slotOf[w]; ok && hardAt[s] > load[s] {
				out[k] = w
				load[s]++
				continue
			}
		}
		best := bestWorker(workers, seeds, k, func(i int) bool {
			s := slots[i]
			return !workers[i].keepOnly && load[s] < hardAt[s] && !ctl.Prohibits(workers[i].id)
		})
		if best >= 0 {
			out[k] = workers[best].id
			load[slots[best]]++
		}
	}
	return out
}

// bestWorker returns the position in workers of the worker that ranks
// highest for key among those ok accepts (by rendezvous weight, then by
// id), or -1 when ok accepts none: the first worker ok accepts in the
// order of weights, found with one weight per worker and no sort. seeds
// are the workers' workerSeed.
func bestWorker(workers []candidate, seeds []uint64, key string, ok func(i int) bool) int {
	best, bestScore := -1, uint64(0)
	for i := range workers {
		if !ok(i) {
			continue
		}
		s := keyScore(seeds[i], key)
		if best < 0 || s > bestScore || (s == bestScore && workers[i].id < workers[best].id) {
			best, bestScore = i, s
		}
	}
	return best
}

// rankBefore orders two keys of one worker by that worker's affinity.
func rankBefore(worker, a, b string) bool {
	sa, sb := placementScore(worker, a), placementScore(worker, b)
	return sa > sb || (sa == sb && a < b)
}

// quotas splits n keys over the workers as evenly as their limits allow
// (water-filling): the most constrained workers are served first, and each
// gets the smaller of its limit and an even share of what is left.
func quotas(n int, workers []candidate, maxPerWorker int) map[string]int {
	order := append([]candidate(nil), workers...)
	sort.Slice(order, func(i, j int) bool {
		li, lj := limit(order[i], n, maxPerWorker), limit(order[j], n, maxPerWorker)
		return li < lj || (li == lj && order[i].id < order[j].id)
	})
	out := make(map[string]int, len(order))
	left := n
	for i, w := range order {
		share := (left + len(order) - i - 1) / (len(order) - i) // ceil
		q := min(limit(w, n, maxPerWorker), share)
		out[w.id] = q
		left -= q
	}
	return out
}

// limit is the hard bound of keys for worker w out of n: its capacity and
// the group's max per worker, when set.
func limit(w candidate, n, maxPerWorker int) int {
	l := n
	if w.capacity > 0 {
		l = min(l, w.capacity)
	}
	if maxPerWorker > 0 {
		l = min(l, maxPerWorker)
	}
	return l
}
