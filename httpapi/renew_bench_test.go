package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// BenchmarkRenewMany measures bulk renewal through the HTTP API of a
// three-node in-process cluster over TCP: 8 holders, each renewing its
// 1,000 leases with one POST /v1/renew per call, concurrently. It reports
// leases renewed per second. Profile it with -cpuprofile to see where a
// bulk renewal's time goes (README, Performance).
func BenchmarkRenewMany(b *testing.B) {
	const holders, per = 8, 1000
	c := inproc.Start(b, 3, inproc.Options{
		TCP:   true,
		Serve: serveDefaultAPI,
	})
	li := c.Leader()
	node := c.Node(li)
	url := c.Front(li).URL + "/v1/renew"
	bodies := make([][]byte, holders)
	var load sync.WaitGroup
	for h := 0; h < holders; h++ {
		load.Add(1)
		go func(h int) {
			defer load.Done()
			body := wire.RenewManyBody{Holder: fmt.Sprintf("holder-%d", h), Secret: testSecret, Leases: make([]client.LeaseRef, per)}
			var keys sync.WaitGroup
			for k := 0; k < per; k++ {
				keys.Add(1)
				go func(k int) {
					defer keys.Done()
					key := fmt.Sprintf("bulk/%d/%d", h, k)
					l, _, err := node.Acquire(b.Context(), cluster.AcquireRequest{Key: key, Holder: body.Holder, TTL: time.Minute, Secret: testSecret})
					if err != nil {
						b.Error(err)
						return
					}
					body.Leases[k] = client.LeaseRef{Key: key, Token: l.Token}
				}(k)
			}
			keys.Wait()
			var err error
			if bodies[h], err = json.Marshal(body); err != nil {
				b.Error(err)
			}
		}(h)
	}
	load.Wait()
	if b.Failed() {
		return
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: holders}}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	calls := b.N
	var mu sync.Mutex
	for h := 0; h < holders; h++ {
		wg.Add(1)
		go func(body []byte) {
			defer wg.Done()
			for {
				mu.Lock()
				if calls == 0 {
					mu.Unlock()
					return
				}
				calls--
				mu.Unlock()
				resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("renew: %s", resp.Status)
					return
				}
			}
		}(bodies[h])
	}
	wg.Wait()
	b.ReportMetric(float64(b.N*per)/time.Since(start).Seconds(), "leases/s")
}
