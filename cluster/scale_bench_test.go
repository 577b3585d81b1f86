package cluster

import (
	"flag"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/lessor"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness/sizes"
)

// How a server's costs grow with the number of leases and workers:
//
//	go test ./cluster -run XXX -bench Scale -benchtime 1x -scale 10000,100000,200000,1000000
//
// The default sizes keep `go test -bench .` quick; the results file
// (test/bench/results/2026-11-24-scale.md) names the command of each figure.
var scaleSizes = flag.String("scale", "10000,100000", "comma-separated lease counts for the Scale benchmarks")

// ScaleSizes is the -scale list, for the benchmarks of package cluster_test.
func ScaleSizes(b *testing.B) []int {
	b.Helper()
	out, err := sizes.Parse("scale", *scaleSizes)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// ScaleAcquires is n acquisitions of keys scale/0000000… by a thousand
// holders, from offset from, in log entries of at most 1000 commands.
func ScaleAcquires(from, n int, ttl time.Duration) [][]byte {
	const perEntry = 1000
	var out [][]byte
	cmds := make([]fsm.Command, 0, perEntry)
	for i := from; i < from+n; i += perEntry {
		cmds = cmds[:0]
		for j := i; j < min(i+perEntry, from+n); j++ {
			cmds = append(cmds, fsm.Acquire{Key: fmt.Sprintf("scale/%07d", j), Holder: fmt.Sprintf("worker-%d-4242-1a2b3c4d", j%1000), TTL: ttl, Time: int64(j)})
		}
		out = append(out, fsm.Encode(fsm.Batch{Commands: cmds}))
	}
	return out
}

// scaleMachine is a follower's machine holding n leases.
func scaleMachine(b *testing.B, n int) *fsm.Machine {
	b.Helper()
	m := fsm.New()
	for i, data := range ScaleAcquires(0, n, time.Minute) {
		m.Apply(&raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: data})
	}
	if held, _ := m.Counts(); held != n {
		b.Fatalf("%d leases held, want %d", held, n)
	}
	return m
}

// BenchmarkScalePromote: what a new leader does in establish before it
// serves anything: list the held leases (Machine.Held) and give each a
// deadline (lessor.Promote). It also reports the live heap per lease of
// the leader's machine and of its lessor.
func BenchmarkScalePromote(b *testing.B) {
	for _, n := range ScaleSizes(b) {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			base := sizes.HeapInUse()
			m := scaleMachine(b, n)
			machineHeap := sizes.HeapInUse() - base
			l := lessor.New(SystemClock{})
			var held, promote time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				l.Demote()
				start := time.Now()
				leases := m.Held()
				held += time.Since(start)
				start = time.Now()
				l.Promote(leases, nil)
				promote += time.Since(start)
			}
			b.StopTimer()
			if l.Len() != n {
				b.Fatalf("lessor tracks %d leases, want %d", l.Len(), n)
			}
			// The lessor's heap: what Demote frees.
			before := sizes.HeapInUse()
			l.Demote()
			lessorHeap := before - sizes.HeapInUse()
			runtime.KeepAlive(m)
			per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(per(held), "ms-held")
			b.ReportMetric(per(promote), "ms-promote")
			b.ReportMetric(per(held+promote), "ms-total")
			b.ReportMetric(float64(machineHeap)/float64(n), "B/lease-machine")
			b.ReportMetric(float64(lessorHeap)/float64(n), "B/lease-lessor")
		})
	}
}
