package placement

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/tenure-io/tenure/fsm"
)

func partitionKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("partitions/%d", i)
	}
	return keys
}

func workersN(from, to int) []candidate {
	var out []candidate
	for i := from; i < to; i++ {
		out = append(out, candidate{id: fmt.Sprintf("worker-%02d", i)})
	}
	return out
}

func noControl(string) fsm.KeyControl { return fsm.KeyControl{} }

func loads(plan map[string]string) map[string]int {
	out := map[string]int{}
	for _, w := range plan {
		out[w]++
	}
	return out
}

// checkEven fails unless every key has an owner among workers and the
// loads differ by at most one.
func checkEven(t *testing.T, keys []string, workers []candidate, plan map[string]string) {
	t.Helper()
	if len(plan) != len(keys) {
		t.Fatalf("%d of %d keys have an owner", len(plan), len(keys))
	}
	l := loads(plan)
	lo, hi := len(keys), 0
	for _, w := range workers {
		lo, hi = min(lo, l[w.id]), max(hi, l[w.id])
	}
	if hi-lo > 1 {
		t.Fatalf("loads range from %d to %d, want within one key of even", lo, hi)
	}
}

func TestPlacementEvenSpread(t *testing.T) {
	keys := partitionKeys(1024)
	workers := workersN(0, 64)
	plan := place(keys, workers, 0, nil, noControl)
	checkEven(t, keys, workers, plan)
	again := place(keys, workers, 0, nil, noControl)
	if movedKeys(plan, again) != 0 {
		t.Fatal("the same inputs gave a different plan")
	}
}

// A worker that joins takes about 1/N of the keys; nothing else moves.
func TestPlacementJoinMovesAboutOneNth(t *testing.T) {
	keys := partitionKeys(1024)
	before := place(keys, workersN(0, 64), 0, nil, noControl)
	workers := workersN(0, 65)
	after := place(keys, workers, 0, before, noControl)
	checkEven(t, keys, workers, after)
	fair := (len(keys) + 64) / 65 // ceil(1024/65) = 16
	if n := movedKeys(before, after); n > fair {
		t.Fatalf("%d keys moved when one worker joined 64, want at most %d (1/N)", n, fair)
	}
	for k, w := range after {
		if before[k] != w && w != "worker-64" {
			t.Fatalf("key %s moved from %s to %s, not to the new worker", k, before[k], w)
		}
	}
}

// A worker that leaves moves only its own keys.
func TestPlacementLeaveMovesOnlyItsKeys(t *testing.T) {
	keys := partitionKeys(1024)
	before := place(keys, workersN(0, 64), 0, nil, noControl)
	workers := workersN(1, 64) // worker-00 is gone
	after := place(keys, workers, 0, before, noControl)
	checkEven(t, keys, workers, after)
	for k, w := range before {
		if w != "worker-00" && after[k] != w {
			t.Fatalf("key %s of a surviving worker moved from %s to %s", k, w, after[k])
		}
	}
}

func TestPlacementLimits(t *testing.T) {
	keys := partitionKeys(100)
	tests := []limitCase{
		{"max per worker", workersN(0, 4), 10, 40, map[string]int{"worker-00": 10, "worker-03": 10}},
		{"capacity", []candidate{{id: "a", capacity: 5}, {id: "b", capacity: 0}, {id: "c", capacity: 0}}, 0, 100, map[string]int{"a": 5, "b": 48, "c": 48}},
		{"capacity and max", []candidate{{id: "a", capacity: 5}, {id: "b", capacity: 0}}, 30, 35, map[string]int{"a": 5, "b": 30}},
		{"more workers than keys", workersN(0, 150), 0, 100, map[string]int{"worker-00": 1, "worker-149": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := place(keys, tt.workers, tt.max, nil, noControl)
			checkLimits(t, plan, tt.wantOwned, tt.wantMax)
		})
	}
}

// limitCase is a group's workers and max per worker, with the number of
// keys that should be owned and the most keys each named worker may have.
type limitCase struct {
	name      string
	workers   []candidate
	max       int
	wantOwned int
	wantMax   map[string]int
}

// checkLimits fails unless plan owns wantOwned keys and gives no worker
// more keys than its wantMax entry.
func checkLimits(t *testing.T, plan map[string]string, wantOwned int, wantMax map[string]int) {
	t.Helper()
	if len(plan) != wantOwned {
		t.Fatalf("%d keys owned, want %d", len(plan), wantOwned)
	}
	l := loads(plan)
	for w, limit := range wantMax {
		if l[w] > limit {
			t.Fatalf("%s has %d keys, want at most %d", w, l[w], limit)
		}
	}
}

func TestPlacementControls(t *testing.T) {
	keys := partitionKeys(64)
	workers := workersN(0, 4)
	control := func(k string) fsm.KeyControl {
		switch k {
		case "partitions/1":
			return fsm.KeyControl{Disabled: true}
		case "partitions/2":
			return fsm.KeyControl{Prohibited: []string{"worker-00", "worker-01", "worker-02"}}
		case "partitions/3":
			return fsm.KeyControl{Prohibited: []string{"worker-00", "worker-01", "worker-02", "worker-03"}}
		}
		return fsm.KeyControl{}
	}
	// Start from a plan that gives the controlled keys to worker-00.
	prev := map[string]string{"partitions/1": "worker-00", "partitions/2": "worker-00", "partitions/3": "worker-00"}
	plan := place(keys, workers, 0, prev, control)
	if w, ok := plan["partitions/1"]; ok {
		t.Errorf("disabled key has owner %s", w)
	}
	if w := plan["partitions/2"]; w != "worker-03" {
		t.Errorf("partitions/2 owner %q, want worker-03, the only one not prohibited", w)
	}
	if w, ok := plan["partitions/3"]; ok {
		t.Errorf("a key every worker is prohibited on has owner %s", w)
	}
}

// Draining every worker but one, step by step, keeps every key owned and
// moves only the drained worker's keys at each step.
func TestPlacementDrainStepByStep(t *testing.T) {
	keys := partitionKeys(256)
	workers := workersN(0, 8)
	plan := place(keys, workers, 0, nil, noControl)
	for len(workers) > 1 {
		gone := workers[0].id
		workers = workers[1:]
		next := place(keys, workers, 0, plan, noControl)
		checkEven(t, keys, workers, next)
		for k, w := range plan {
			if w != gone && next[k] != w {
				t.Fatalf("draining %s moved %s from %s", gone, k, w)
			}
		}
		plan = next
	}
}

// A key that only prohibited-free workers may take is still owned when
// those workers are past their even share but under their hard limit.
func TestPlacementProhibitedWorkerLeavesNoKeyUnowned(t *testing.T) {
	keys := partitionKeys(8)
	workers := []candidate{{id: "a"}, {id: "b"}}
	control := func(string) fsm.KeyControl { return fsm.KeyControl{Prohibited: []string{"b"}} }
	plan := place(keys, workers, 0, nil, control)
	if len(plan) != len(keys) {
		t.Fatalf("%d of %d keys owned while worker a may take them all", len(plan), len(keys))
	}
	for k, w := range plan {
		if w != "a" {
			t.Fatalf("%s given to %s, who is prohibited on it", k, w)
		}
	}
}

// Placing again from a plan gives the same plan: the balancer never flaps.
func TestPlacementIsAFixedPoint(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 500; i++ {
		keys := partitionKeys(1 + rng.Intn(60))
		var workers []candidate
		for w := 0; w < 1+rng.Intn(8); w++ {
			capacity := 0
			if rng.Intn(3) == 0 {
				capacity = 1 + rng.Intn(10)
			}
			workers = append(workers, candidate{id: fmt.Sprintf("w%d", w), capacity: capacity})
		}
		maxPer := 0
		if rng.Intn(3) == 0 {
			maxPer = 1 + rng.Intn(10)
		}
		controls := map[string]fsm.KeyControl{}
		for _, k := range keys {
			switch rng.Intn(6) {
			case 0:
				controls[k] = fsm.KeyControl{Disabled: true}
			case 1:
				controls[k] = fsm.KeyControl{Prohibited: []string{workers[rng.Intn(len(workers))].id}}
			}
		}
		control := func(k string) fsm.KeyControl { return controls[k] }
		first := place(keys, workers, maxPer, nil, control)
		second := place(keys, workers, maxPer, first, control)
		if n := movedKeys(first, second); n != 0 {
			t.Fatalf("case %d: placing again moved %d keys (%d keys, workers %v, max %d)", i, n, len(keys), workers, maxPer)
		}
		l := loads(second)
		for _, w := range workers {
			if l[w.id] > limit(w, len(keys), maxPer) {
				t.Fatalf("case %d: %s has %d keys, above its limit", i, w.id, l[w.id])
			}
		}
	}
}
