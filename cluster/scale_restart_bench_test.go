package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// scaleTail is the log a restarted server replays after its snapshot: a
// little under the default SnapshotThreshold (8192 entries), the most a
// server keeps before it snapshots again, each entry one acquisition.
const scaleTail = 8000

// BenchmarkScaleRestart: a one-server cluster (bolt and snapshots on disk,
// as in production) holding n leases, snapshotted to disk, then scaleTail
// more acquisitions in the log. It reports the snapshot (Node.Snapshot:
// capture, encoding, write and fsync), then, after a stop, the time of
// cluster.New (open the stores, check the log, restore the snapshot) and
// the time until the restarted server serves again (Ready: elected,
// replayed the tail, LeaderEstablished applied, every lease promoted).
//
//	go test ./cluster -run XXX -bench ScaleRestart -benchtime 1x -scale 10000,100000,1000000
func BenchmarkScaleRestart(b *testing.B) {
	for _, n := range cluster.ScaleSizes(b) {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c := inproc.Start(b, 1, inproc.Options{Tweak: func(cfg *cluster.Config) {
				// Only the benchmark's snapshot.
				cfg.SnapshotThreshold = 1 << 40
				cfg.SnapshotInterval = time.Hour
			}})
			c.Leader()
			apply := func(entries [][]byte) {
				r := cluster.RaftOf(c.Node(0))
				futures := make([]raft.ApplyFuture, 0, len(entries))
				for _, data := range entries {
					futures = append(futures, r.Apply(data, time.Minute))
				}
				for _, f := range futures {
					if err := f.Error(); err != nil {
						b.Fatal(err)
					}
				}
			}
			apply(cluster.ScaleAcquires(0, n, time.Hour))

			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			start := time.Now()
			info, err := c.Node(0).Snapshot(ctx)
			if err != nil {
				b.Fatal(err)
			}
			snapshot := time.Since(start)

			tail := make([][]byte, scaleTail)
			for i := range tail {
				tail[i] = fsm.Encode(fsm.Acquire{Key: fmt.Sprintf("tail/%05d", i), Holder: "worker-tail-4242-1a2b3c4d", TTL: time.Hour})
			}
			apply(tail)

			var open, ready time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.Stop(0)
				start := time.Now()
				c.Restart(0)
				open += time.Since(start)
				deadline := start.Add(5 * time.Minute)
				for {
					err := c.Node(0).Ready()
					if err == nil {
						break
					}
					if !errors.Is(err, cluster.ErrNotLeader) && !errors.Is(err, cluster.ErrNotReady) {
						b.Fatal(err)
					}
					if time.Now().After(deadline) {
						b.Fatalf("not ready 5m after the restart: %v", err)
					}
					time.Sleep(time.Millisecond)
				}
				ready += time.Since(start)
			}
			b.StopTimer()
			if held, _ := cluster.MachineOf(c.Node(0)).Counts(); held != n+scaleTail {
				b.Fatalf("%d leases held after the restart, want %d", held, n+scaleTail)
			}
			per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(float64(snapshot.Microseconds())/1000, "ms-snapshot")
			b.ReportMetric(float64(info.Size), "snapshot-bytes")
			b.ReportMetric(per(open), "ms-new")
			b.ReportMetric(per(ready), "ms-ready")
		})
	}
}
