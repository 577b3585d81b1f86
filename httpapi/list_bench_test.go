package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// BenchmarkListLeasesMemory measures the leader's memory while 16 clients
// list every lease at once. It loads TENURE_BENCH_LEASES leases (default
// 100,000) into a one-node in-process cluster behind the HTTP API, then
// runs 16 concurrent full listings in pages of TENURE_BENCH_LIMIT (default
// MaxListLimit) per iteration, sampling the heap and the process's RSS
// every 20ms. The clients count the leases and keep only the end of each
// page (for next), so the memory is the server's. It reports:
//
//	base-heap-MB  heap in use after loading, before listing
//	peak-heap-MB  highest heap in use while listing
//	listing-MB    peak-heap-MB − base-heap-MB: what 16 listings added,
//	              garbage not yet collected included (GOGC lets the heap
//	              grow to about twice what is live before collecting)
//	listing-live-MB  the most the listings added to the live heap (what
//	              a collection found live, /gc/heap/live:bytes)
//	base-rss-MB   the process's RSS after loading, before listing
//	peak-rss-MB   the process's highest RSS while listing (sampled)
//
// With TENURE_BENCH_HEADROOM_MB=N the heap gets a fixed budget once the
// leases are loaded: no collection by growth (GOGC off), a memory limit of
// what the runtime holds then plus N MiB.
//
// docs/http-api.md records the figures and the command that made them.
func BenchmarkListLeasesMemory(b *testing.B) {
	total := envInt(b, "TENURE_BENCH_LEASES", 100_000)
	limit := envInt(b, "TENURE_BENCH_LIMIT", MaxListLimit)
	const listers = 16
	c := inproc.Start(b, 1, inproc.Options{
		TCP:   true,
		Tweak: func(cfg *cluster.Config) { cfg.MaxBatch = 1 << 15 },
		Serve: serveDefaultAPI,
	})
	node := c.Node(c.Leader())
	base := c.Front(0).URL
	loadLeases(b, node, total)

	runtime.GC()
	debug.FreeOSMemory()
	baseHeap, baseLive, baseRSS := heapInUse(), liveHeap(), rss("VmRSS:")
	if mb := os.Getenv("TENURE_BENCH_HEADROOM_MB"); mb != "" {
		// A fixed budget: collect only when the runtime's memory reaches
		// what it holds now plus the headroom. Listings that kept more
		// than the headroom would push the heap past it.
		n := envInt(b, "TENURE_BENCH_HEADROOM_MB", 0)
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(int64(runtimeTotal()) + int64(n)<<20)
		defer debug.SetGCPercent(100)
		defer debug.SetMemoryLimit(math.MaxInt64)
	}
	var peak, peakLive, peakRSS atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			if h := heapInUse(); h > peak.Load() {
				peak.Store(h)
			}
			if h := liveHeap(); h > peakLive.Load() {
				peakLive.Store(h)
			}
			if h := rss("VmRSS:"); h > peakRSS.Load() {
				peakRSS.Store(h)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: listers}}
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		errs := make(chan error, listers)
		for range listers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := listEverything(hc, base, limit)
				if err == nil && n != total {
					err = fmt.Errorf("listed %d leases, want %d", n, total)
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	close(stop)
	<-sampled
	mb := func(n uint64) float64 { return float64(n) / (1 << 20) }
	b.ReportMetric(mb(baseHeap), "base-heap-MB")
	b.ReportMetric(mb(peak.Load()), "peak-heap-MB")
	b.ReportMetric(mb(peak.Load()-min(baseHeap, peak.Load())), "listing-MB")
	b.ReportMetric(mb(peakLive.Load()-min(baseLive, peakLive.Load())), "listing-live-MB")
	b.ReportMetric(float64(baseRSS)/1024, "base-rss-MB")
	b.ReportMetric(float64(peakRSS.Load())/1024, "peak-rss-MB")
	b.ReportMetric(0, "ns/op") // the time is not the point
}

// serveDefaultAPI is the API of DefaultConfig on node n, for benchmarks.
func serveDefaultAPI(n *cluster.Node, reg *prometheus.Registry, logger hclog.Logger) (http.Handler, error) {
	api := DefaultConfig()
	api.Node, api.Gatherer = NodeOf(n), reg
	if logger != nil {
		api.Logger = logger
	}
	return New(api)
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// loadLeases acquires total keys bench/0000000… through the node, many at
// once so that group commit fills large batches.
func loadLeases(b *testing.B, node *cluster.Node, total int) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for range 2048 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(total) {
					return
				}
				req := cluster.AcquireRequest{Key: fmt.Sprintf("bench/%07d", i), Holder: fmt.Sprintf("worker-%d", i%64), TTL: time.Hour, Secret: testSecret,
					Metadata: map[string]string{"zone": "a"}}
				if _, _, err := node.Acquire(context.Background(), req); err != nil {
					select {
					case errs <- fmt.Errorf("acquire %s: %w", req.Key, err):
					default:
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

// listEverything lists every lease page by page and returns how many it
// saw. It keeps no page: it counts the leases as they stream by and keeps
// the end of the answer, where next is.
func listEverything(hc *http.Client, base string, limit int) (int, error) {
	count, cursor := 0, ""
	buf := make([]byte, 32<<10)
	cw := &countingTail{}
	for {
		u := fmt.Sprintf("%s/v1/leases?limit=%d", base, limit)
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		resp, err := hc.Get(u)
		if err != nil {
			return count, err
		}
		*cw = countingTail{}
		_, err = io.CopyBuffer(struct{ io.Writer }{cw}, resp.Body, buf)
		resp.Body.Close()
		if err != nil {
			return count, err
		}
		if resp.StatusCode != http.StatusOK {
			return count, fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, cw.tail[:cw.n])
		}
		count += cw.leases
		tail := string(cw.tail[:cw.n])
		i := strings.LastIndex(tail, `"next":"`)
		if i < 0 {
			return count, nil // a server without pages: everything at once
		}
		next := tail[i+len(`"next":"`):]
		cursor = next[:strings.IndexByte(next, '"')]
		if cursor == "" {
			return count, nil
		}
	}
}

// countingTail counts the leases of a streamed list answer and keeps its
// last bytes, without allocating (the clients run in the measured process).
type countingTail struct {
	tail   [512]byte
	n      int // bytes in tail
	leases int
}

var leaseStart = []byte(`{"key":"`)

func (c *countingTail) Write(p []byte) (int, error) {
	// A marker across two writes: the old tail's end joined to p's start.
	var joint [16]byte
	k := min(c.n, len(leaseStart)-1)
	j := copy(joint[:], c.tail[c.n-k:c.n])
	j += copy(joint[j:], p[:min(len(p), len(leaseStart)-1)])
	c.leases += bytes.Count(joint[:j], leaseStart) + bytes.Count(p, leaseStart)
	if len(p) >= len(c.tail) {
		c.n = copy(c.tail[:], p[len(p)-len(c.tail):])
	} else {
		keep := min(c.n, len(c.tail)-len(p))
		copy(c.tail[:], c.tail[c.n-keep:c.n])
		c.n = keep + copy(c.tail[keep:], p)
	}
	return len(p), nil
}

// liveHeap is the heap that the last collection found live
// (/gc/heap/live:bytes): garbage made since then is not in it.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// runtimeTotal is the memory the Go runtime holds from the OS, as the
// memory limit counts it.
func runtimeTotal() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

// rss is a field of /proc/self/status (VmRSS:, VmHWM:) in KiB; 0 where
// there is none.
func rss(field string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			n, _ := strconv.ParseUint(f[1], 10, 64)
			return n
		}
	}
	return 0
}
