package placement

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/tenure-io/tenure/fsm"
)

// zipfWeights gives keys the weights 1/(rank+1)^0.5, the ranks shuffled
// by a fixed seed, so that a few keys carry much of the load.
func zipfWeights(keys []string, seed int64) map[string]float64 {
	rank := rand.New(rand.NewSource(seed)).Perm(len(keys))
	out := make(map[string]float64, len(keys))
	for i, k := range keys {
		out[k] = 1 / math.Sqrt(float64(rank[i]+1))
	}
	return out
}

func weightOf(m map[string]float64) func(string) float64 {
	return func(k string) float64 { return m[k] }
}

func equalWeight(string) float64 { return 1 }

// relativeLoads returns each worker's load over an equal share of the
// owned keys' weight.
func relativeLoads(workers []candidate, plan map[string]string, weight func(string) float64) map[string]float64 {
	load := map[string]float64{}
	var total float64
	for k, w := range plan {
		load[w] += weight(k)
		total += weight(k)
	}
	out := map[string]float64{}
	for _, w := range workers {
		out[w.id] = load[w.id] / (total / float64(len(workers)))
	}
	return out
}

// spread returns the lowest and highest relative load.
func spread(workers []candidate, plan map[string]string, weight func(string) float64) (lo, hi float64) {
	lo = math.Inf(1)
	for _, r := range relativeLoads(workers, plan, weight) {
		lo, hi = min(lo, r), max(hi, r)
	}
	return lo, hi
}

// settle calls placeByLoad from prev, feeding each plan back, until a call
// moves nothing, at most rounds times. It fails if a call moves more than
// the budget, and returns the plan, the moves and the calls.
func settle(t *testing.T, keys []string, workers []candidate, prev map[string]string, weight func(string) float64,
	s loadSettings, rounds int) (plan map[string]string, moves, calls int) {
	t.Helper()
	plan = prev
	for calls < rounds {
		next, moved := placeByLoad(keys, workers, 0, plan, noControl, weight, s)
		calls++
		if moved > s.Budget {
			t.Fatalf("call %d moved %d keys, budget %d", calls, moved, s.Budget)
		}
		plan, moves = next, moves+moved
		if moved == 0 {
			return plan, moves, calls
		}
	}
	t.Fatalf("still moving keys after %d calls", rounds)
	return nil, 0, 0
}

// From the key-count plan, skewed weights reach the threshold in a few
// calls, and then the plan stays put.
func TestPlaceByLoadSkewedSettles(t *testing.T) {
	keys := partitionKeys(1024)
	workers := workersN(0, 64)
	weight := weightOf(zipfWeights(keys, 1))
	s := loadSettings{Threshold: 1.25, Budget: 16}
	plan := place(keys, workers, 0, nil, noControl)
	if _, hi := spread(workers, plan, weight); hi <= s.Threshold {
		t.Fatalf("the count plan's highest relative load is %.3f, want a test that starts above %v", hi, s.Threshold)
	}
	plan, moves, calls := settle(t, keys, workers, plan, weight, s, 20)
	if len(plan) != len(keys) {
		t.Fatalf("%d of %d keys owned", len(plan), len(keys))
	}
	if lo, hi := spread(workers, plan, weight); hi > s.Threshold || lo < 1/s.Threshold {
		t.Fatalf("relative loads %.3f..%.3f after %d calls, want within [%.3f, %v]", lo, hi, calls, 1/s.Threshold, s.Threshold)
	}
	again, moved := placeByLoad(keys, workers, 0, plan, noControl, weight, s)
	if moved != 0 || !maps.Equal(again, plan) {
		t.Fatalf("a settled plan moved %d keys (%d changed), want none", moved, movedKeys(plan, again))
	}
	t.Logf("settled in %d calls, %d moves", calls, moves)
}

// A call moves at most Budget keys from owners that may keep them, while
// orphans are placed whatever the budget.
func TestPlaceByLoadBudget(t *testing.T) {
	keys := partitionKeys(1024)
	all := workersN(0, 64)
	weight := weightOf(zipfWeights(keys, 2))
	prev := place(keys, all, 0, nil, noControl)
	tests := []struct {
		name    string
		workers []candidate
		budget  int
	}{
		{"none", all, 0},
		{"one", all, 1},
		{"five", all, 5},
		{"none, a worker left", all[1:], 0},
		{"three, a worker left", all[1:], 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, moved := placeByLoad(keys, tt.workers, 0, prev, noControl, weight, loadSettings{Threshold: 1.25, Budget: tt.budget})
			if moved > tt.budget {
				t.Fatalf("moved %d, want at most the budget %d", moved, tt.budget)
			}
			if len(plan) != len(keys) {
				t.Fatalf("%d of %d keys owned, want every orphan placed", len(plan), len(keys))
			}
			changed := 0
			for k, w := range prev {
				if w != "worker-00" || len(tt.workers) == len(all) {
					if plan[k] != w {
						changed++
					}
				}
			}
			if changed > moved {
				t.Fatalf("%d keys left an owner that could keep them, but moved is %d", changed, moved)
			}
			if moved != tt.budget {
				t.Fatalf("moved %d keys from a plan far from balance, want the whole budget %d", moved, tt.budget)
			}
		})
	}
}

// A plan within the threshold is left alone when weights change inside
// the band.
func TestPlaceByLoadHysteresis(t *testing.T) {
	keys := partitionKeys(1024)
	workers := workersN(0, 64)
	plan := place(keys, workers, 0, nil, noControl) // 16 keys each
	rng := rand.New(rand.NewSource(3))
	drift := map[string]float64{}
	for _, k := range keys {
		drift[k] = 0.9 + 0.2*rng.Float64() // loads stay within [0.9/1.1, 1.1/0.9]
	}
	weight := weightOf(drift)
	if lo, hi := spread(workers, plan, weight); lo == hi {
		t.Fatal("the drift changed no relative load")
	}
	next, moved := placeByLoad(keys, workers, 0, plan, noControl, weight, loadSettings{Threshold: 1.25, Budget: 16})
	if moved != 0 || !maps.Equal(next, plan) {
		t.Fatalf("weights drifting inside the band moved %d keys (%d changed), want none", moved, movedKeys(plan, next))
	}
}

// A worker that joins an even group takes keys until it is within the
// threshold of its share, only from the others, and only to itself.
func TestPlaceByLoadJoin(t *testing.T) {
	keys := partitionKeys(1024)
	s := loadSettings{Threshold: 1.25, Budget: 16}
	before, _, _ := settle(t, keys, workersN(0, 63), place(keys, workersN(0, 63), 0, nil, noControl), equalWeight, s, 20)
	workers := workersN(0, 64)
	after, moves, _ := settle(t, keys, workers, before, equalWeight, s, 20)
	if want := len(keys)/64 + s.Budget; moves > want {
		t.Fatalf("%d moves after one worker joined 63, want at most %d", moves, want)
	}
	for k, w := range after {
		if before[k] != w && w != "worker-63" {
			t.Fatalf("key %s moved from %s to %s, not to the new worker", k, before[k], w)
		}
	}
	if got, want := loads(after)["worker-63"], int(math.Ceil(float64(len(keys))/64/s.Threshold)); got < want {
		t.Fatalf("the new worker has %d keys, want at least %d", got, want)
	}
}

// With equal weights, the keys a worker receives are those it ranks
// highest among the source's keys: rendezvous hashing breaks the ties.
func TestPlaceByLoadMovesByRendezvousRank(t *testing.T) {
	keys := partitionKeys(10)
	workers := []candidate{{id: "a"}, {id: "b"}}
	prev := map[string]string{}
	for _, k := range keys {
		prev[k] = "a"
	}
	plan, moved := placeByLoad(keys, workers, 0, prev, noControl, equalWeight, loadSettings{Threshold: 1.25, Budget: 100})
	if moved != 4 { // b needs 4 of the 5 keys of its share to be within 1/1.25
		t.Fatalf("moved %d keys, want 4", moved)
	}
	checkTopRanked(t, keys, plan, "b", "a", 4)
}

// A worker that leaves moves only its own keys, as orphans, not moves.
func TestPlaceByLoadLeave(t *testing.T) {
	keys := partitionKeys(1024)
	weight := weightOf(zipfWeights(keys, 4))
	s := loadSettings{Threshold: 1.25, Budget: 16}
	before, _, _ := settle(t, keys, workersN(0, 64), place(keys, workersN(0, 64), 0, nil, noControl), weight, s, 20)
	after, moved := placeByLoad(keys, workersN(1, 64), 0, before, noControl, weight, s)
	if moved != 0 {
		t.Fatalf("moved %d keys when a worker left, want 0 (its keys are orphans)", moved)
	}
	if len(after) != len(keys) {
		t.Fatalf("%d of %d keys owned", len(after), len(keys))
	}
	for k, w := range before {
		if w != "worker-00" && after[k] != w {
			t.Fatalf("key %s of a surviving worker moved from %s to %s", k, w, after[k])
		}
	}
	if lo, hi := spread(workersN(1, 64), after, weight); hi > s.Threshold || lo < 1/s.Threshold {
		t.Fatalf("relative loads %.3f..%.3f after placing the orphans, want within the threshold", lo, hi)
	}
}

// A worker that no move can bring within bounds (it holds one key heavier
// than its share) does not make the others trade keys among themselves:
// every one of them is within bounds.
func TestPlaceByLoadLeavesWorkersWithinBoundsAlone(t *testing.T) {
	workers := workersN(0, 5)
	prev := map[string]string{"hot": workers[0].id}
	weights := map[string]float64{"hot": 31}
	var keys []string
	n := 0
	for i, count := range []int{26, 25, 22, 22} { // relative loads 1.03, 0.99, 0.87, 0.87
		for range count {
			k := fmt.Sprintf("k%03d", n)
			n++
			keys, prev[k], weights[k] = append(keys, k), workers[i+1].id, 1
		}
	}
	keys = append(keys, "hot")
	plan, moved := placeByLoad(keys, workers, 0, prev, noControl, weightOf(weights), loadSettings{Threshold: 1.2, Budget: 16})
	if moved != 0 || movedKeys(prev, plan) != 0 {
		t.Errorf("%d keys moved between workers within bounds (%d in the plan), want none", moved, movedKeys(prev, plan))
	}
}

// More workers than keys: a worker with one key is above the threshold
// and one with none below, but moving the key helps nobody, so nothing
// moves.
func TestPlaceByLoadMovesOnlyWhenBetter(t *testing.T) {
	keys := partitionKeys(100)
	workers := workersN(0, 150)
	plan, _ := placeByLoad(keys, workers, 0, nil, noControl, equalWeight, loadSettings{Threshold: 1.25, Budget: 0})
	next, moved := placeByLoad(keys, workers, 0, plan, noControl, equalWeight, loadSettings{Threshold: 1.25, Budget: 1000})
	if moved != 0 || !maps.Equal(next, plan) {
		t.Fatalf("moved %d keys (%d changed), want none: no move lowers a load", moved, movedKeys(plan, next))
	}
}

// Orphans go to the highest-ranked worker that stays within the
// threshold, else to the one whose load over share would be lowest.
func TestPlaceByLoadOrphans(t *testing.T) {
	workers := []candidate{{id: "a"}, {id: "b"}, {id: "c"}}
	prev := map[string]string{"a1": "a", "b1": "b", "c1": "c"}
	tests := []struct {
		name       string
		a, b, c, x float64 // weights of a1, b1, c1 and of the orphan
		threshold  float64
		want       []string // the orphan goes to the one of these it ranks highest
	}{
		{"fits only on b", 10, 6, 8, 6, 1.25, []string{"b"}},                  // limit 12.5
		{"fits nowhere: lowest ratio", 10, 6, 8, 9, 1.25, []string{"b"}},      // 19, 15, 17 over 11
		{"fits exactly on b, and on c", 12, 6, 3, 9, 1.5, []string{"b", "c"}}, // limit 15: 21, 15, 12
		{"fits everywhere", 1, 1, 1, 0.5, 1.5, []string{"a", "b", "c"}},       // limit 1.75
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			won := map[string]bool{}
			for i := 0; i < 20; i++ {
				x := fmt.Sprintf("x%d", i)
				weights := map[string]float64{"a1": tt.a, "b1": tt.b, "c1": tt.c, x: tt.x}
				keys := slices.Collect(maps.Keys(weights))
				plan, _ := placeByLoad(keys, workers, 0, prev, noControl, weightOf(weights), loadSettings{Threshold: tt.threshold})
				want := slices.MaxFunc(tt.want, func(v, w string) int { return cmp.Compare(placementScore(v, x), placementScore(w, x)) })
				if plan[x] != want {
					t.Fatalf("orphan %s went to %s, want %s, which it ranks highest of %v", x, plan[x], want, tt.want)
				}
				won[want] = true
			}
			if len(won) != len(tt.want) {
				t.Fatalf("only %v won among %v: the case cannot tell rank from load", won, tt.want)
			}
		})
	}
	// Light orphans spread by rank while they fit: from nothing, with no
	// budget, no worker ends above the threshold.
	keys := partitionKeys(1024)
	weight := weightOf(zipfWeights(keys, 5))
	plan, _ := placeByLoad(keys, workersN(0, 64), 0, nil, noControl, weight, loadSettings{Threshold: 1.25})
	if _, hi := spread(workersN(0, 64), plan, weight); hi > 1.25 {
		t.Errorf("placing from nothing left a relative load of %.3f, want at most 1.25", hi)
	}
}

// A move happens only when it lowers the larger relative load of its
// pair, and it moves the key that lowers it most.
func TestPlaceByLoadMoveRule(t *testing.T) {
	ones := func(prefix string, n int) map[string]float64 {
		out := map[string]float64{}
		for i := 0; i < n; i++ {
			out[fmt.Sprintf("%s%d", prefix, i)] = 1
		}
		return out
	}
	tests := []struct {
		name      string
		threshold float64
		a, b      map[string]float64 // keys and weights of workers a and b
		nobody    map[string]float64 // keys prohibited on both
		want      string             // the key moved, "" for none
	}{
		{"lowers it a little", 1.05, map[string]float64{"a1": 5, "a2": 1}, map[string]float64{"b1": 4.99}, nil, "a2"},
		{"does not lower it", 1.05, map[string]float64{"a1": 5, "a2": 1}, map[string]float64{"b1": 5.01}, nil, ""},
		{"lowers it most", 1.1, map[string]float64{"a1": 4, "a2": 2.5, "a3": 0.5}, map[string]float64{"b1": 1}, nil, "a2"},
		{"within the threshold", 1.25, ones("a", 10), ones("b", 8), nil, ""},
		{"an unowned key is no share", 1.25, ones("a", 10), ones("b", 8), map[string]float64{"z": 100}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			weights, prev := map[string]float64{}, map[string]string{}
			for owner, ks := range map[string]map[string]float64{"a": tt.a, "b": tt.b, "": tt.nobody} {
				for k, w := range ks {
					weights[k] = w
					if owner != "" {
						prev[k] = owner
					}
				}
			}
			control := func(k string) fsm.KeyControl {
				if _, ok := tt.nobody[k]; ok {
					return fsm.KeyControl{Prohibited: []string{"a", "b"}}
				}
				return fsm.KeyControl{}
			}
			keys := slices.Sorted(maps.Keys(weights))
			workers := []candidate{{id: "a"}, {id: "b"}}
			plan, moved := placeByLoad(keys, workers, 0, prev, control, weightOf(weights), loadSettings{Threshold: tt.threshold, Budget: 1})
			got := ""
			for k, w := range plan {
				if prev[k] != w {
					got = k
				}
			}
			if got != tt.want || moved != min(len(tt.want), 1) {
				t.Fatalf("moved %d, key %q; want key %q", moved, got, tt.want)
			}
		})
	}
}

// Hard limits hold for keys kept, placed and moved. The moves end on their
// own, and the plan then stays put: rounding does not let two moves undo
// each other (with integer weights, a pair of equal loads invites it).
func TestPlaceByLoadLimits(t *testing.T) {
	keys := partitionKeys(100)
	heavy := map[string]float64{}
	for i, k := range keys {
		heavy[k] = 1 + float64(i%10)
	}
	tests := []limitCase{
		{"max per worker", workersN(0, 4), 10, 40, map[string]int{"worker-00": 10, "worker-03": 10}},
		{"capacity", []candidate{{id: "a", capacity: 5}, {id: "b"}, {id: "c"}}, 0, 100, map[string]int{"a": 5}},
		{"capacity and max", []candidate{{id: "a", capacity: 5}, {id: "b"}}, 30, 35, map[string]int{"a": 5, "b": 30}},
		{"capacity under a large share", []candidate{{id: "a", capacity: 5, loadCap: 100}, {id: "b", loadCap: 1}}, 0, 100, map[string]int{"a": 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Everything starts on the first worker, over its limit.
			prev := map[string]string{}
			for _, k := range keys {
				prev[k] = tt.workers[0].id
			}
			s := loadSettings{Threshold: 1.1, Budget: 1000}
			plan, moved := placeByLoad(keys, tt.workers, tt.max, prev, noControl, weightOf(heavy), s)
			if moved >= s.Budget {
				t.Fatalf("moved %d keys of 100, want the moves to end before the budget of %d", moved, s.Budget)
			}
			if again, moved := placeByLoad(keys, tt.workers, tt.max, plan, noControl, weightOf(heavy), s); moved != 0 || !maps.Equal(again, plan) {
				t.Fatalf("placing again moved %d keys (%d changed), want none", moved, movedKeys(plan, again))
			}
			checkLimits(t, plan, tt.wantOwned, tt.wantMax)
		})
	}
}

// An owner over its hard limit keeps the keys it ranks highest; with no
// budget, nothing else changes its keys.
func TestPlaceByLoadOverLimitKeepsBestRanked(t *testing.T) {
	keys := partitionKeys(40)
	prev := map[string]string{}
	for _, k := range keys {
		prev[k] = "a"
	}
	workers := []candidate{{id: "a", capacity: 5}, {id: "b"}}
	plan, _ := placeByLoad(keys, workers, 0, prev, noControl, equalWeight, loadSettings{Threshold: 1.25})
	checkTopRanked(t, keys, plan, "a", "b", 5)
}

// Disabled keys get no owner, prohibited workers never get a key, even as
// the best move, and stuck workers keep what they have and get nothing
// else.
func TestPlaceByLoadControls(t *testing.T) {
	keys := partitionKeys(64)
	workers := []candidate{{id: "worker-00"}, {id: "worker-01"}, {id: "worker-02"}, {id: "worker-03", keepOnly: true}}
	control := func(k string) fsm.KeyControl {
		switch k {
		case "partitions/1":
			return fsm.KeyControl{Disabled: true}
		case "partitions/3":
			return fsm.KeyControl{Prohibited: []string{"worker-00", "worker-01", "worker-02", "worker-03"}}
		}
		// worker-02 is prohibited on every other key.
		return fsm.KeyControl{Prohibited: []string{"worker-02"}}
	}
	// worker-00 holds all but two keys: it is far above its share, and
	// worker-02 and the stuck worker-03 far below.
	prev := map[string]string{}
	for _, k := range keys {
		prev[k] = "worker-00"
	}
	prev["partitions/10"], prev["partitions/11"] = "worker-03", "worker-03"
	for i := 20; i < 30; i++ {
		prev[fmt.Sprintf("partitions/%d", i)] = "gone" // orphans
	}
	plan, _ := placeByLoad(keys, workers, 0, prev, control, equalWeight, loadSettings{Threshold: 1.25, Budget: 1000})
	if w, ok := plan["partitions/1"]; ok {
		t.Errorf("disabled key has owner %s", w)
	}
	if w, ok := plan["partitions/3"]; ok {
		t.Errorf("a key every worker is prohibited on has owner %s", w)
	}
	for k, w := range plan {
		if control(k).Prohibits(w) {
			t.Errorf("%s given to %s, which is prohibited on it", k, w)
		}
		if w == "worker-03" && prev[k] != w {
			t.Errorf("%s given to the stuck worker-03", k)
		}
	}
	if l := loads(plan); l["worker-01"] < 20 || l["worker-03"] != 2 {
		t.Errorf("loads %v, want worker-01 to take keys and worker-03 to keep its two", l)
	}
}

// Shares follow loadCap: twice the capacity, about twice the load; a
// worker that announced none counts as the mean.
func TestPlaceByLoadLoadCap(t *testing.T) {
	keys := partitionKeys(1200)
	weight := weightOf(zipfWeights(keys, 6))
	s := loadSettings{Threshold: 1.1, Budget: 32}
	tests := []struct {
		name    string
		caps    []float64
		wantRel []float64 // load over total, in worker order
	}{
		{"two to one", []float64{2, 1, 1}, []float64{0.5, 0.25, 0.25}},
		{"none counts as the mean", []float64{3, 1, 0}, []float64{0.5, 1.0 / 6, 1.0 / 3}},
		{"none announced", []float64{0, 0, 0}, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var workers []candidate
			for i, c := range tt.caps {
				workers = append(workers, candidate{id: fmt.Sprintf("w%d", i), loadCap: c})
			}
			plan, _, _ := settle(t, keys, workers, nil, weight, s, 100)
			load := map[string]float64{}
			var total float64
			for k, w := range plan {
				load[w] += weight(k)
				total += weight(k)
			}
			for i, w := range workers {
				got, want := load[w.id]/total, tt.wantRel[i]
				if got > want*s.Threshold || got < want/s.Threshold {
					t.Errorf("%s (loadCap %v) carries %.3f of the load, want %.3f within the threshold", w.id, w.loadCap, got, want)
				}
			}
		})
	}
}

// Weights that are not positive numbers count as 1.
func TestPlaceByLoadBadWeights(t *testing.T) {
	keys := partitionKeys(200)
	workers := workersN(0, 7)
	s := loadSettings{Threshold: 1.2, Budget: 50}
	want, _ := placeByLoad(keys, workers, 0, nil, noControl, equalWeight, s)
	for _, bad := range []float64{0, -2, math.NaN(), math.Inf(1), math.Inf(-1)} {
		weight := func(k string) float64 {
			if k == "partitions/7" || k == "partitions/100" {
				return bad
			}
			return 1
		}
		if got, _ := placeByLoad(keys, workers, 0, nil, noControl, weight, s); !maps.Equal(got, want) {
			t.Errorf("weight %v: %d keys placed differently from weight 1", bad, movedKeys(want, got))
		}
	}
}

// The plan depends on keys as a set and on workers as a set of ids; a
// repeated id counts once, with its first entry.
func TestPlaceByLoadDeterministic(t *testing.T) {
	keys := partitionKeys(500)
	weight := weightOf(zipfWeights(keys, 7))
	workers := workersN(0, 20)
	for i := range workers {
		workers[i].loadCap = float64(1 + i%3)
	}
	prev := place(keys, workers[:15], 0, nil, noControl)
	s := loadSettings{Threshold: 1.1, Budget: 40}
	want, wantMoved := placeByLoad(keys, workers, 0, prev, noControl, weight, s)
	rng := rand.New(rand.NewSource(8))
	for i := 0; i < 10; i++ {
		ws := slices.Clone(workers)
		rng.Shuffle(len(ws), func(a, b int) { ws[a], ws[b] = ws[b], ws[a] })
		ks := slices.Clone(keys)
		rng.Shuffle(len(ks), func(a, b int) { ks[a], ks[b] = ks[b], ks[a] })
		ks = append(ks, ks[:10]...)
		got, moved := placeByLoad(ks, ws, 0, prev, noControl, weight, s)
		if moved != wantMoved || !maps.Equal(got, want) {
			t.Fatalf("shuffle %d: moved %d, %d keys placed differently; want the same plan (moved %d)", i, moved, movedKeys(want, got), wantMoved)
		}
	}
	dup := append(slices.Clone(workers), candidate{id: "worker-00", keepOnly: true, loadCap: 50})
	if got, _ := placeByLoad(keys, dup, 0, prev, noControl, weight, s); !maps.Equal(got, want) {
		t.Fatalf("a repeated id changed %d keys; want its first entry to count", movedKeys(want, got))
	}
}

// Random groups: the rules hold on every call, calls settle, and a
// settled plan is a fixed point.
func TestPlaceByLoadRandomGroups(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for c := 0; c < 300; c++ {
		keys := partitionKeys(1 + rng.Intn(80))
		var workers []candidate
		for w := 0; w < 1+rng.Intn(8); w++ {
			cand := candidate{id: fmt.Sprintf("w%d", w), loadCap: float64(rng.Intn(4))}
			if rng.Intn(3) == 0 {
				cand.capacity = 1 + rng.Intn(15)
			}
			cand.keepOnly = rng.Intn(6) == 0
			workers = append(workers, cand)
		}
		maxPer := 0
		if rng.Intn(3) == 0 {
			maxPer = 1 + rng.Intn(15)
		}
		controls, weights, prev := map[string]fsm.KeyControl{}, map[string]float64{}, map[string]string{}
		for _, k := range keys {
			weights[k] = 0.1 + 10*rng.Float64()*rng.Float64()
			switch rng.Intn(6) {
			case 0:
				controls[k] = fsm.KeyControl{Disabled: true}
			case 1:
				controls[k] = fsm.KeyControl{Prohibited: []string{workers[rng.Intn(len(workers))].id}}
			}
			if rng.Intn(2) == 0 {
				prev[k] = fmt.Sprintf("w%d", rng.Intn(10))
			}
		}
		control := func(k string) fsm.KeyControl { return controls[k] }
		s := loadSettings{Threshold: 1 + rng.Float64(), Budget: rng.Intn(6)}
		plan := prev
		settled, mustSettle := false, false
		for call := 0; call < 200 && !settled; call++ {
			next, moved := placeByLoad(keys, workers, maxPer, plan, control, weightOf(weights), s)
			checkLoadRules(t, keys, workers, maxPer, plan, control, next, moved, s.Budget)
			settled = moved == 0 && maps.Equal(next, plan)
			if mustSettle && !settled {
				t.Fatalf("case %d, call %d: moved %d keys (%d changed) after a call that moved fewer than the budget and owned every key",
					c, call, moved, movedKeys(plan, next))
			}
			mustSettle = moved < s.Budget && len(next) == enabledKeys(keys, control)
			plan = next
		}
		if !settled {
			t.Fatalf("case %d: the plan still changed after 200 calls", c)
		}
	}
}

// checkLoadRules fails unless plan, made from prev, obeys the rules a
// caller relies on.
func checkLoadRules(t *testing.T, keys []string, workers []candidate, maxPer int, prev map[string]string,
	control func(string) fsm.KeyControl, plan map[string]string, moved, budget int) {
	t.Helper()
	if moved > budget {
		t.Fatalf("moved %d keys, budget %d", moved, budget)
	}
	byID := map[string]candidate{}
	for _, w := range workers {
		byID[w.id] = w
	}
	enabled := enabledKeys(keys, control)
	for k, w := range plan {
		cand, ok := byID[w]
		switch {
		case !ok:
			t.Fatalf("%s given to %s, not a candidate", k, w)
		case control(k).Disabled:
			t.Fatalf("disabled key %s given to %s", k, w)
		case control(k).Prohibits(w):
			t.Fatalf("%s given to %s, which is prohibited on it", k, w)
		case cand.keepOnly && prev[k] != w:
			t.Fatalf("%s given to the stuck %s", k, w)
		}
	}
	for w, n := range loads(plan) {
		if n > limit(byID[w], enabled, maxPer) {
			t.Fatalf("%s has %d keys, above its limit %d", w, n, limit(byID[w], enabled, maxPer))
		}
	}
	// A key that leaves an owner that could keep every key it had is a move.
	prevLoad := loads(prev)
	changed := 0
	for k, w := range prev {
		cand, ok := byID[w]
		if ok && !control(k).Disabled && !control(k).Prohibits(w) && prevLoad[w] <= limit(cand, enabled, maxPer) && plan[k] != w {
			changed++
		}
	}
	if changed > moved {
		t.Fatalf("%d keys left an owner that could keep them, but moved is %d", changed, moved)
	}
}

func enabledKeys(keys []string, control func(string) fsm.KeyControl) int {
	n := 0
	for _, k := range keys {
		if !control(k).Disabled {
			n++
		}
	}
	return n
}

// BenchmarkPlaceByLoad: one call on skewed weights (1/(rank+1)^0.5,
// shuffled), from nothing, from the key-count plan, and settled:
//
//	go test ./cluster/internal/placement -run XXX -bench PlaceByLoad -benchtime 3x
func BenchmarkPlaceByLoad(b *testing.B) {
	for _, size := range []struct{ keys, workers int }{{1_024, 64}, {10_000, 1_000}} {
		keys := partitionKeys(size.keys)
		workers := workersN(0, size.workers)
		weight := weightOf(zipfWeights(keys, 1))
		s := loadSettings{Threshold: 1.25, Budget: 16}
		counted := place(keys, workers, 0, nil, noControl)
		settled := counted
		for moved := 1; moved > 0; {
			settled, moved = placeByLoad(keys, workers, 0, settled, noControl, weight, s)
		}
		for _, bc := range []struct {
			name string
			prev map[string]string
		}{{"initial", nil}, {"counted", counted}, {"settled", settled}} {
			b.Run(fmt.Sprintf("keys=%d/workers=%d/%s", size.keys, size.workers, bc.name), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if plan, _ := placeByLoad(keys, workers, 0, bc.prev, noControl, weight, s); len(plan) != len(keys) {
						b.Fatalf("%d of %d keys placed", len(plan), len(keys))
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
			})
		}
	}
}

// checkTopRanked fails unless plan gives worker the n keys it ranks
// highest and other the rest.
func checkTopRanked(t *testing.T, keys []string, plan map[string]string, worker, other string, n int) {
	t.Helper()
	byRank := slices.Clone(keys)
	slices.SortFunc(byRank, func(x, y string) int {
		if rankBefore(worker, x, y) {
			return -1
		}
		return 1
	})
	for i, k := range byRank {
		if want := map[bool]string{true: worker, false: other}[i < n]; plan[k] != want {
			t.Fatalf("%s (%s's rank %d) went to %s, want %s", k, worker, i, plan[k], want)
		}
	}
}
