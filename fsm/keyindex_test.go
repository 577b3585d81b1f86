package fsm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// The key index agrees with a sorted copy of the map after any sequence of
// inserts, replacements and removals, across block splits and empty
// blocks, and ascends from any key.
func TestKeyIndexAgreesWithSortedMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	want := map[string]*Lease{}
	x := newKeyIndex()
	check := func(step int) {
		t.Helper()
		keys := make([]string, 0, len(want))
		for k := range want {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, from := range []string{"", fmt.Sprintf("k%05d", r.IntN(6000)), "zzz"} {
			var got []string
			x.ascend(from, func(l *Lease) bool {
				if want[l.Key] != l {
					t.Fatalf("step %d: index holds a stale record of %q", step, l.Key)
				}
				got = append(got, l.Key)
				return true
			})
			i, _ := slices.BinarySearch(keys, from)
			if !slices.Equal(got, keys[i:]) {
				t.Fatalf("step %d: ascend(%q) = %d keys, want %d", step, from, len(got), len(keys[i:]))
			}
		}
		for _, blk := range x.blocks {
			if len(blk) == 0 || len(blk) > blockSize {
				t.Fatalf("step %d: block of %d records, want 1 to %d", step, len(blk), blockSize)
			}
		}
	}
	for step := range 20_000 {
		k := fmt.Sprintf("k%05d", r.IntN(5000))
		if r.IntN(4) == 0 {
			delete(want, k)
			x.remove(k)
		} else {
			l := &Lease{Key: k, Token: uint64(step)}
			want[k] = l
			x.put(l)
		}
		if step%2000 == 0 {
			check(step)
		}
	}
	check(-1)
	// Built at once (Restore), it holds the same.
	all := make([]*Lease, 0, len(want))
	for _, l := range want {
		all = append(all, l)
	}
	x = newKeyIndex(all...)
	check(-2)
}
