package main

import (
	"errors"
	"maps"
	"math"
	"math/bits"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenure-io/tenure/client"
)

// subBits sets the resolution of a histogram: 2^subBits buckets per power
// of two, so a reported percentile exceeds the true sample by less than
// 1/2^subBits (1.6%). Values below 2^subBits nanoseconds are exact.
const subBits = 6

// numBuckets covers every positive time.Duration.
const numBuckets = (63 - subBits + 1) << subBits

// histogram counts latencies in log-linear buckets. record is safe for
// concurrent use; read the results once recording has stopped.
type histogram struct {
	counts [numBuckets]atomic.Uint64
	total  atomic.Uint64
	max    atomic.Int64
}

// bucketOf returns the bucket of v nanoseconds.
func bucketOf(v uint64) int {
	if v < 1<<subBits {
		return int(v)
	}
	shift := bits.Len64(v) - 1 - subBits
	return (shift+1)<<subBits + int(v>>shift) - 1<<subBits
}

// bucketHigh returns the highest value that falls in bucket i.
func bucketHigh(i int) uint64 {
	if i < 1<<subBits {
		return uint64(i)
	}
	shift := i>>subBits - 1
	low := (uint64(i&(1<<subBits-1)) + 1<<subBits) << shift
	return low + 1<<shift - 1
}

func (h *histogram) record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(uint64(d))].Add(1)
	h.total.Add(1)
	for {
		m := h.max.Load()
		if int64(d) <= m || h.max.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// count returns the number of recorded values.
func (h *histogram) count() uint64 { return h.total.Load() }

// quantile returns the smallest recorded value v (to the resolution of the
// buckets) such that at least q·count values are at most v; q in [0, 1].
// It returns 0 when nothing was recorded.
func (h *histogram) quantile(q float64) time.Duration {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = max(1, min(rank, n))
	var cum uint64
	for i := range h.counts {
		cum += h.counts[i].Load()
		if cum >= rank {
			return min(time.Duration(bucketHigh(i)), time.Duration(h.max.Load()))
		}
	}
	return time.Duration(h.max.Load())
}

// opStats measures one operation of a bench run.
type opStats struct {
	latency histogram // successful operations only
	errors  atomic.Uint64

	mu    sync.Mutex
	kinds map[string]uint64 // errors by kind
}

func (s *opStats) recordError(err error) {
	s.errors.Add(1)
	kind := errorKind(err)
	s.mu.Lock()
	if s.kinds == nil {
		s.kinds = map[string]uint64{}
	}
	s.kinds[kind]++
	s.mu.Unlock()
}

// errorKinds returns a copy of the error counts by kind.
func (s *opStats) errorKinds() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.kinds)
}

// errorKind names an error for the report: the API's error code, or
// "connection", or "other".
func errorKind(err error) string {
	var ae *client.APIError
	if errors.As(err, &ae) {
		if ae.Code != "" {
			return ae.Code
		}
		return "http_" + strconv.Itoa(ae.StatusCode)
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return "connection"
	}
	return "other"
}
