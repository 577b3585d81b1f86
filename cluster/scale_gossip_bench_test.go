package cluster

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/tenure-io/tenure/cluster/internal/connlimit"
	"github.com/tenure-io/tenure/cluster/internal/nodeconfig"
	"github.com/tenure-io/tenure/cluster/internal/transport"
)

// How long gossip takes to tell everyone about every worker:
//
//	go test ./cluster -run XXX -bench ScaleGossip -benchtime 1x -gossip-workers 500
//
// Off unless -gossip-workers is set: hundreds of memberlist instances are
// too slow for `go test -bench .`.
var gossipWorkers = flag.Int("gossip-workers", 0, "workers for BenchmarkScaleGossip (0 skips it)")

// benchMember is the memberlist delegate of a benchmark member: it
// announces meta and ignores everything else.
type benchMember struct{ meta []byte }

func (d *benchMember) NodeMeta(int) []byte                  { return d.meta }
func (d *benchMember) NotifyMsg([]byte)                     {}
func (d *benchMember) GetBroadcasts(int, int) [][]byte      { return nil }
func (d *benchMember) LocalState(bool) []byte               { return nil }
func (d *benchMember) MergeRemoteState([]byte, bool)        {}
func (d *benchMember) benchMeta(b *testing.B, m MemberMeta) { d.meta = mustJSON(b, m) }

func mustJSON(b *testing.B, v any) []byte {
	b.Helper()
	out, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// startBenchMember starts memberlist on a free port of ip: a server as
// tenure configures it (the LAN defaults without compression, behind the
// connection caps of DefaultConnLimits), or a worker as package client
// does (the same, and a push-pull every 5s).
func startBenchMember(b *testing.B, meta MemberMeta, ip string, server bool) *memberlist.Memberlist {
	b.Helper()
	mc := memberlist.DefaultLANConfig()
	mc.EnableCompression = false // as servers and workers
	mc.Name = meta.ID
	mc.BindAddr, mc.AdvertiseAddr = ip, ip
	d := &benchMember{}
	d.benchMeta(b, meta)
	mc.Delegate = d
	mc.LogOutput = io.Discard
	if server {
		tr, err := transport.NewGossipTransport(ip, 0, connlimit.New(nodeconfig.GossipLimits(nodeconfig.DefaultConnLimits(), nil)), mc, nil)
		if err != nil {
			b.Fatal(err)
		}
		mc.Transport = tr
		mc.BindPort, mc.AdvertisePort = tr.GetAutoBindPort(), tr.GetAutoBindPort()
	} else {
		mc.PushPullInterval = 5 * time.Second // client's workerPushPull
	}
	list, err := memberlist.Create(mc)
	if err != nil {
		b.Fatalf("member %s: %v", meta.ID, err)
	}
	b.Cleanup(func() { list.Shutdown() }) // a no-op once stopped
	return list
}

// progress logs at once to stderr with -test.v (b.Logf shows only when the
// benchmark ends, which a starved run may never reach), else through b.Logf.
func progress(b *testing.B, format string, args ...any) {
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		return
	}
	b.Logf(format, args...)
}

// benchWorkerIP is worker j's loopback address, one per worker
// (127.0.1.1, 127.0.1.2 …), so that the server's per-address connection
// cap sees them as the separate hosts they would be.
func benchWorkerIP(j int) string { return fmt.Sprintf("127.0.%d.%d", 1+j/250, 1+j%250) }

// BenchmarkScaleGossip: one server and -gossip-workers workers, each a
// memberlist on a loopback address of its own in this process. All workers
// join the server at once (a refused join is tried again a second later);
// it reports the time until the server sees every worker alive, and until
// every member sees every other (full convergence), and logs the views
// every 5s. Every member runs on this machine's CPUs, so the figures are
// an upper bound for workers spread over many hosts.
func BenchmarkScaleGossip(b *testing.B) {
	n := *gossipWorkers
	if n == 0 {
		b.Skip("set -gossip-workers to run")
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		server := startBenchMember(b, MemberMeta{Role: "server", ID: "s1", RaftAddr: "127.0.0.1:8300", HTTPAddr: "127.0.0.1:8500"}, "127.0.0.1", true)
		workers := make([]*memberlist.Memberlist, n)
		for j := range workers {
			id := fmt.Sprintf("worker-%03d", j)
			workers[j] = startBenchMember(b, MemberMeta{Role: "worker", ID: id, Holder: id + "-4242-1a2b3c4d", Groups: []string{"partitions"}}, benchWorkerIP(j), false)
		}
		all := append([]*memberlist.Memberlist{server}, workers...)
		stop := func() {
			var wg sync.WaitGroup
			for _, l := range all {
				wg.Add(1)
				go func() { defer wg.Done(); l.Shutdown() }()
			}
			wg.Wait()
		}
		seed := server.LocalNode().Address()
		b.StartTimer()

		// Every worker joins at once, and tries again a second later when
		// refused, as package client's Worker does.
		start := time.Now()
		var wg sync.WaitGroup
		var refusedMu sync.Mutex
		refused := 0
		for _, w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					if _, err := w.Join([]string{seed}); err == nil {
						return
					}
					refusedMu.Lock()
					refused++
					refusedMu.Unlock()
					if time.Since(start) > time.Minute {
						b.Errorf("worker %s not joined after a minute", w.LocalNode().Name)
						return
					}
					time.Sleep(time.Second)
				}
			}()
		}
		wg.Wait()
		joined := time.Since(start)
		progress(b, "%v: every worker has joined, %d joins refused", joined.Round(time.Millisecond), refused)
		deadline := start.Add(3 * time.Minute)
		var serverSaw, allSaw time.Duration
		nextLog := start.Add(5 * time.Second)
		for allSaw == 0 {
			if time.Now().After(nextLog) {
				lo, hi := len(all), 0
				for _, l := range all {
					lo, hi = min(lo, l.NumMembers()), max(hi, l.NumMembers())
				}
				progress(b, "%v: the server sees %d alive, the others %d to %d", time.Since(start).Round(time.Second), server.NumMembers(), lo, hi)
				nextLog = nextLog.Add(5 * time.Second)
			}
			if time.Now().After(deadline) {
				stop()
				if serverSaw > 0 {
					b.Logf("the server saw every member alive %v after the joins began", serverSaw.Round(time.Millisecond))
				}
				b.Fatalf("no convergence within 3m: the server sees %d of %d alive", server.NumMembers(), len(all))
			}
			if serverSaw == 0 && server.NumMembers() == len(all) {
				serverSaw = time.Since(start)
			}
			behind := 0
			for _, l := range all {
				if l.NumMembers() != len(all) {
					behind++
				}
			}
			if behind == 0 {
				allSaw = time.Since(start)
			}
			time.Sleep(20 * time.Millisecond)
		}
		b.StopTimer()
		stop()
		b.ReportMetric(joined.Seconds(), "s-joined")
		b.ReportMetric(float64(refused), "joins-refused")
		b.ReportMetric(serverSaw.Seconds(), "s-server-sees-all")
		b.ReportMetric(allSaw.Seconds(), "s-all-see-all")
	}
}
