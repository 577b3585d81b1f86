package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

// machineReads serves the lease list of a bare state machine, as a
// follower answers a stale read; it holds no single lease, and makes no
// write (the embedded Leases is nil).
type machineReads struct {
	Leases
	m *fsm.Machine
}

func (machineReads) LeaseIndex() uint64 { return 0 }
func (machineReads) Get(context.Context, string, cluster.Consistency) (cluster.LeaseView, error) {
	return cluster.LeaseView{}, cluster.ErrNotFound
}
func (n machineReads) ListPage(_ context.Context, f fsm.Filter, p fsm.Page, _ cluster.Consistency) (cluster.LeasePage, error) {
	res := n.m.ListPage(f, p)
	out := cluster.LeasePage{Leases: make([]cluster.LeaseView, len(res.Leases)), Index: res.Index, Next: res.Next}
	for i, l := range res.Leases {
		out.Leases[i] = cluster.LeaseView{Lease: l}
	}
	return out, nil
}

// discard is a ResponseWriter that keeps nothing of the body.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// A page of GET /v1/leases costs the server memory in proportion to the
// page, not to the number of leases: the state machine copies one page and
// the handler writes it lease by lease to the client.
func TestListPageAllocationIndependentOfTotal(t *testing.T) {
	perRequest := func(total int) uint64 {
		m := fsm.New()
		index := uint64(0)
		for start := 0; start < total; start += 50_000 {
			var cmds []fsm.Command
			for i := start; i < min(total, start+50_000); i++ {
				cmds = append(cmds, fsm.Acquire{Key: fmt.Sprintf("k/%07d", i), Holder: "h", TTL: time.Minute})
			}
			index++
			m.Apply(&raft.Log{Index: index, Term: 1, Data: fsm.Encode(fsm.Batch{Commands: cmds})})
		}
		n := (&fakeReplica{status: cluster.Status{Role: "follower"}}).node()
		n.Leases = machineReads{m: m}
		h := serveFake(t, n)
		req := httptest.NewRequest(http.MethodGet, "/v1/leases?stale&limit=100&cursor="+encodeCursor("k/0000500"), nil)
		h.ServeHTTP(&discard{h: http.Header{}}, req) // warm up
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		const runs = 20
		for range runs {
			h.ServeHTTP(&discard{h: http.Header{}}, req)
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / runs
	}
	small, large := perRequest(10_000), perRequest(200_000)
	if large > 2*small+16<<10 {
		t.Errorf("a page of 100 allocates %d bytes with 200,000 leases and %d with 10,000: want a bound independent of the total", large, small)
	}
	t.Logf("a page of 100 leases allocates %d bytes (10,000 leases) and %d (200,000)", small, large)
}
