package fsm

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenure-io/tenure/test/harness/sizes"
)

// How the state machine's costs grow with the number of leases:
//
//	go test ./fsm -run XXX -bench Scale -benchtime 1x -scale 10000,100000,1000000
//
// The default sizes keep `go test -bench .` quick; the results file
// (test/bench/results/2026-11-24-scale.md) names the command of each figure.
var scaleSizes = sizes.Scale("10000,100000")

// scaleMachine holds n held leases, applied in entries of 1000 acquires as
// a follower applies the log: keys scale/0000000…, a thousand holders, no
// metadata.
func scaleMachine(b *testing.B, n int) *Machine {
	b.Helper()
	m := New()
	const perEntry = 1000
	cmds := make([]Command, 0, perEntry)
	index := uint64(0)
	for i := 0; i < n; i += perEntry {
		cmds = cmds[:0]
		for j := i; j < min(i+perEntry, n); j++ {
			cmds = append(cmds, Acquire{Key: fmt.Sprintf("scale/%07d", j), Holder: fmt.Sprintf("worker-%d-4242-1a2b3c4d", j%1000), TTL: ttl, Time: wall + int64(j)})
		}
		index++
		m.Apply(&raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: Encode(Batch{Commands: cmds})})
	}
	if held, _ := m.Counts(); held != n {
		b.Fatalf("%d leases held, want %d", held, n)
	}
	return m
}

// countingSink is a raft.SnapshotSink that discards what it is given and
// counts it.
type countingSink struct{ n int64 }

func (s *countingSink) Write(p []byte) (int, error) { s.n += int64(len(p)); return len(p), nil }
func (s *countingSink) ID() string                  { return "counting" }
func (s *countingSink) Close() error                { return nil }
func (s *countingSink) Cancel() error               { return nil }

// BenchmarkScaleFollowerHeap: the live heap of a follower's machine per
// held lease, built by applying the log, and built by restoring its
// snapshot (as a restarted or caught-up follower is).
func BenchmarkScaleFollowerHeap(b *testing.B) {
	for _, n := range scaleSizes(b) {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				base := sizes.HeapInUse()
				m := scaleMachine(b, n)
				applied := sizes.HeapInUse() - base
				data := persist(b, m)
				m = nil
				base = sizes.HeapInUse()
				r := New()
				if err := r.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
					b.Fatal(err)
				}
				data = nil
				restored := sizes.HeapInUse() - base
				runtime.KeepAlive(r)
				b.ReportMetric(float64(applied)/float64(n), "B/lease-applied")
				b.ReportMetric(float64(restored)/float64(n), "B/lease-restored")
			}
		})
	}
}

// BenchmarkScaleSnapshot: of n held leases, the capture (Snapshot, which
// holds the machine's read lock and so delays Apply), the persist
// (encoding and writing to a sink that discards, concurrent with Apply),
// the snapshot's size, and the restore (decoding and rebuilding the
// tables).
func BenchmarkScaleSnapshot(b *testing.B) {
	for _, n := range scaleSizes(b) {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			m := scaleMachine(b, n)
			var capture, persistT, restore time.Duration
			var size int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				s, err := m.Snapshot()
				if err != nil {
					b.Fatal(err)
				}
				capture += time.Since(start)
				sink := &countingSink{}
				start = time.Now()
				if err := s.Persist(sink); err != nil {
					b.Fatal(err)
				}
				persistT += time.Since(start)
				s.Release()
				size = sink.n

				b.StopTimer()
				data := persist(b, m)
				runtime.GC()
				b.StartTimer()
				start = time.Now()
				if err := New().Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
					b.Fatal(err)
				}
				restore += time.Since(start)
			}
			per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(per(capture), "ms-capture")
			b.ReportMetric(per(persistT), "ms-persist")
			b.ReportMetric(per(restore), "ms-restore")
			b.ReportMetric(float64(size), "snapshot-bytes")
			b.ReportMetric(float64(size)/float64(n), "B/lease-snapshot")
		})
	}
}

// BenchmarkScaleHeld: Machine.Held, the listing the new leader's lessor
// promotes, over n held leases.
func BenchmarkScaleHeld(b *testing.B) {
	for _, n := range scaleSizes(b) {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			m := scaleMachine(b, n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if got := len(m.Held()); got != n {
					b.Fatalf("%d held, want %d", got, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
		})
	}
}
