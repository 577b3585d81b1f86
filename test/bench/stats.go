package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// maxSamples bounds the latencies one client keeps (a reservoir would be
// fairer; the first samples are plenty for p99.9 at the durations run).
const maxSamples = 1 << 20

// Result is one measurement of one workload against one system.
type Result struct {
	// Value is the figure compared: a rate (Unit ".../s") or a time or a
	// size, as the workload's Unit says.
	Value float64
	// P50, P99, P999 are latencies of one call; zero when not measured.
	P50, P99, P999 time.Duration
	Errors         int64
	FirstErr       string
}

// percentile returns the q-quantile (0..1) of sorted samples.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)))
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

// median returns the median of xs (the mean of the middle two for an even
// count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianDur(ds []time.Duration) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(median(xs))
}

// step is one measured call of a client: it returns how many units it did
// (1 for most calls, the number of leases of a bulk renewal) and the
// latency to record, or 0 to record the time of the whole step.
type step func(ctx context.Context) (units int, lat time.Duration, err error)

// loadRun runs n clients, each calling its step until dur ends, and
// returns the rate of units per second and the call latencies. setup makes
// each client's step (unmeasured); it runs for all clients before the
// clock starts. progress, when not nil, gets a line a second.
func loadRun(ctx context.Context, n int, dur time.Duration, progress io.Writer, label string,
	setup func(ctx context.Context, i int) (step, error)) (Result, error) {
	steps := make([]step, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	sem := make(chan struct{}, 64) // bounds the setup's concurrency
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			steps[i], errs[i] = setup(ctx, i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return Result{}, fmt.Errorf("setup: %w", err)
		}
	}

	var units, nerr atomic.Int64
	var firstErr atomic.Value
	samples := make([][]time.Duration, n)
	mctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	start := time.Now()
	stop := progressLine(progress, label, start, &units)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for mctx.Err() == nil {
				t0 := time.Now()
				u, lat, err := steps[i](ctx)
				d := time.Since(t0)
				if lat > 0 {
					d = lat
				}
				if err != nil {
					if ctx.Err() == nil {
						nerr.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					}
					continue
				}
				units.Add(int64(u))
				if len(samples[i]) < maxSamples {
					samples[i] = append(samples[i], d)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stop()
	var all []time.Duration
	for _, s := range samples {
		all = append(all, s...)
	}
	slices.Sort(all)
	r := Result{
		Value: float64(units.Load()) / elapsed.Seconds(),
		P50:   percentile(all, 0.50), P99: percentile(all, 0.99), P999: percentile(all, 0.999),
		Errors: nerr.Load(),
	}
	if s, ok := firstErr.Load().(string); ok {
		r.FirstErr = s
	}
	return r, ctx.Err()
}

// progressLine prints "label: 3s, 12345 done, 4100/s" once a second until
// stop is called.
func progressLine(w io.Writer, label string, start time.Time, units *atomic.Int64) (stop func()) {
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var last int64
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				u := units.Load()
				fmt.Fprintf(w, "  %s: %3.0fs  %9d done  %8d/s\n", label, now.Sub(start).Seconds(), u, u-last)
				last = u
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// syncWriter serializes writes of progress lines from several goroutines,
// and keeps what was written when w is nil.
type syncWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		s.buf = append(s.buf, p...)
		return len(p), nil
	}
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.buf)
}
