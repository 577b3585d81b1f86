package cluster_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// benchLeader starts a three-node cluster over TCP on loopback with bolt on
// disk, as in production, and returns its leader.
func benchLeader(b *testing.B) *cluster.Node {
	c := inproc.Start(b, 3, inproc.Options{TCP: true})
	return c.Node(c.Leader())
}

func ctxB(b *testing.B) context.Context { return harness.Context(b, time.Minute) }

var benchSeq atomic.Int64

// benchParallel runs body in 16 goroutines per CPU against the leader of
// a three-node cluster, each with a holder of its own.
func benchParallel(b *testing.B, body func(n *cluster.Node, holder string, pb *testing.PB)) {
	n := benchLeader(b)
	b.SetParallelism(16)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) { body(n, fmt.Sprintf("bench-%d", benchSeq.Add(1)), pb) })
}

// benchAcquire takes key holder for holder and returns its token.
func benchAcquire(b *testing.B, n *cluster.Node, holder string) uint64 {
	l, _, err := n.Acquire(ctxB(b), cluster.AcquireRequest{Secret: testSecret, Key: holder, Holder: holder, TTL: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	return l.Token
}

// BenchmarkAcquireRelease: 16 clients per CPU acquire and release their own
// keys through the leader of a three-node cluster; every operation is a
// Raft write, batched with whatever else is in flight (group commit).
func BenchmarkAcquireRelease(b *testing.B) {
	benchParallel(b, func(n *cluster.Node, holder string, pb *testing.PB) {
		for pb.Next() {
			token := benchAcquire(b, n, holder)
			if _, err := n.Release(ctxB(b), holder, holder, testSecret, token); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRenew: 16 holders per CPU renew through the leader; renewals
// write no lease entry to the log and are confirmed by shared leadership
// rounds (each round commits one barrier entry today).
func BenchmarkRenew(b *testing.B) {
	benchParallel(b, func(n *cluster.Node, holder string, pb *testing.PB) {
		token := benchAcquire(b, n, holder)
		for pb.Next() {
			if _, err := n.Renew(ctxB(b), holder, holder, testSecret, token); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkHandoff: the time from a release to the grant of the key to a
// blocked acquirer, which the same log entry carries.
func BenchmarkHandoff(b *testing.B) {
	n := benchLeader(b)
	l, _, err := n.Acquire(ctxB(b), cluster.AcquireRequest{Secret: testSecret, Key: "handoff", Holder: "h0", TTL: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	b.ResetTimer()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		next := fmt.Sprintf("h%d", i+1)
		got := make(chan cluster.LeaseView, 1)
		go func() {
			l, _, err := n.Acquire(ctxB(b), cluster.AcquireRequest{Secret: testSecret, Key: "handoff", Holder: next, TTL: time.Minute, Wait: time.Minute})
			if err != nil {
				b.Error(err)
			}
			got <- l
		}()
		for n.Waiting() == 0 {
			time.Sleep(50 * time.Microsecond)
		}
		b.StartTimer()
		start := time.Now()
		if _, err := n.Release(ctxB(b), "handoff", l.Holder, testSecret, l.Token); err != nil {
			b.Fatal(err)
		}
		l = <-got
		total += time.Since(start)
		b.StopTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs/handoff")
}
