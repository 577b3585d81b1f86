package placement

import (
	"fmt"
	"testing"
)

// BenchmarkScalePlacement: one placement of a group (place, as the
// balancer runs it on every membership change), from nothing, in the
// steady state (the previous plan still fits), after one worker joined,
// and after one worker left:
//
//	go test ./cluster/internal/placement -run XXX -bench ScalePlacement -benchtime 3x
func BenchmarkScalePlacement(b *testing.B) {
	for _, size := range []struct{ keys, workers int }{{1_000, 100}, {10_000, 100}, {10_000, 1_000}} {
		keys := partitionKeys(size.keys)
		all := workersN(0, size.workers)
		initial := place(keys, all, 0, nil, noControl)
		fewer := place(keys, all[1:], 0, nil, noControl)
		for _, bc := range []struct {
			name    string
			workers []candidate
			prev    map[string]string
		}{
			{"initial", all, nil},
			{"steady", all, initial},
			{"join", all, fewer},
			{"leave", all[1:], initial},
		} {
			b.Run(fmt.Sprintf("keys=%d/workers=%d/%s", size.keys, size.workers, bc.name), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if plan := place(keys, bc.workers, 0, bc.prev, noControl); len(plan) != len(keys) {
						b.Fatalf("%d of %d keys placed", len(plan), len(keys))
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
			})
		}
	}
}
