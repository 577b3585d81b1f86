package main

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
)

func TestHistogramPercentilesOfKnownSample(t *testing.T) {
	tests := []struct {
		name    string
		samples func(h *histogram)
		q       float64
		want    time.Duration
		tol     float64 // allowed relative excess over want
	}{
		{"empty", func(*histogram) {}, 0.5, 0, 0},
		{"one value", func(h *histogram) { h.record(3 * time.Millisecond) }, 0.99, 3 * time.Millisecond, 1.0 / 64},
		// 1..100ns are below 64ns or in buckets of width 1..2: p50 is 50ns.
		{"exact range p50", recordRange(1, 100, 1), 0.50, 50, 0},
		{"exact range max", recordRange(1, 100, 1), 1, 100, 0},
		// 1ms..10s in steps of 1ms: 10000 samples.
		{"p50", recordRange(1, 10000, time.Millisecond), 0.50, 5000 * time.Millisecond, 1.0 / 64},
		{"p99", recordRange(1, 10000, time.Millisecond), 0.99, 9900 * time.Millisecond, 1.0 / 64},
		{"p99.9", recordRange(1, 10000, time.Millisecond), 0.999, 9990 * time.Millisecond, 1.0 / 64},
		{"max is exact", recordRange(1, 10000, time.Millisecond), 1, 10 * time.Second, 0},
		{"min", recordRange(1, 10000, time.Millisecond), 0, time.Millisecond, 1.0 / 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &histogram{}
			tt.samples(h)
			got := h.quantile(tt.q)
			hi := time.Duration(float64(tt.want) * (1 + tt.tol))
			if got < tt.want || got > hi {
				t.Errorf("quantile(%v) = %v, want %v (up to %v)", tt.q, got, tt.want, hi)
			}
		})
	}
}

func recordRange(from, to int, unit time.Duration) func(h *histogram) {
	return func(h *histogram) {
		for i := from; i <= to; i++ {
			h.record(time.Duration(i) * unit)
		}
	}
}

func TestHistogramBuckets(t *testing.T) {
	// Every value lies in its bucket, and buckets tile the line.
	values := []uint64{0, 1, 63, 64, 65, 127, 128, 129, 1000, 1 << 20, 1<<20 + 12345, 1<<62 + 1, 1<<63 - 1}
	for _, v := range values {
		i := bucketOf(v)
		if i < 0 || i >= numBuckets {
			t.Fatalf("bucketOf(%d) = %d, outside [0, %d)", v, i, numBuckets)
		}
		if hi := bucketHigh(i); v > hi {
			t.Errorf("value %d in bucket %d whose highest value is %d", v, i, hi)
		}
		if i > 0 {
			if lo := bucketHigh(i-1) + 1; v < lo {
				t.Errorf("value %d in bucket %d which starts at %d", v, i, lo)
			}
		}
	}
}

func TestHistogramConcurrentRecord(t *testing.T) {
	h := &histogram{}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= 1000; i++ {
				h.record(time.Duration(i) * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	if got := h.count(); got != 8000 {
		t.Errorf("count = %d, want 8000", got)
	}
	if got := h.quantile(1); got != time.Millisecond {
		t.Errorf("max = %v, want 1ms", got)
	}
}

func TestErrorKind(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"api code", fmt.Errorf("giving up: %w", &client.APIError{StatusCode: 503, Code: "no_leader"}), "no_leader"},
		{"bare status", &client.APIError{StatusCode: 502}, "http_502"},
		{"other", errors.New("boom"), "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errorKind(tt.err); got != tt.want {
				t.Errorf("errorKind = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseMix(t *testing.T) {
	tests := []struct {
		in      string
		want    [numOps]int
		wantErr bool
	}{
		{"acquire=1,renew=4,release=1,read=4", [numOps]int{opAcquire: 1, opRenew: 4, opRelease: 1, opRead: 4}, false},
		{"read=1", [numOps]int{opRead: 1}, false},
		{"read=0", [numOps]int{}, true},
		{"write=1", [numOps]int{}, true},
		{"read=-1", [numOps]int{}, true},
		{"read", [numOps]int{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseMix(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseMix(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("parseMix(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
