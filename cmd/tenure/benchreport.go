package main

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// benchReport is the result of a bench run; its JSON is the -json output.
type benchReport struct {
	RunID          string     `json:"run_id"`
	Clients        int        `json:"clients"`
	KeysPerClient  int        `json:"keys_per_client"`
	Op             string     `json:"op"`
	ElapsedSeconds float64    `json:"elapsed_seconds"`
	WarmUpErrors   uint64     `json:"warm_up_errors"`
	Ops            []opReport `json:"ops"`

	elapsed       time.Duration
	total, failed uint64
}

// opReport is the result for one operation. Latencies are of successful
// operations, in milliseconds.
type opReport struct {
	Op         string            `json:"op"`
	Count      uint64            `json:"count"`
	Errors     uint64            `json:"errors"`
	OpsPerSec  float64           `json:"ops_per_sec"`
	P50Ms      float64           `json:"p50_ms"`
	P99Ms      float64           `json:"p99_ms"`
	P999Ms     float64           `json:"p999_ms"`
	MaxMs      float64           `json:"max_ms"`
	ErrorKinds map[string]uint64 `json:"error_kinds,omitempty"`

	p50, p99, p999, max time.Duration
}

func (r *benchRun) report(elapsed time.Duration) *benchReport {
	rep := &benchReport{
		RunID: r.id, Clients: r.cfg.clients, KeysPerClient: r.cfg.keys, Op: r.cfg.op,
		ElapsedSeconds: elapsed.Seconds(), WarmUpErrors: r.warmUpErrors.Load(), elapsed: elapsed,
		Ops: []opReport{},
	}
	for op := range numOps {
		s := &r.stats[op]
		o := opReport{Op: opNames[op], Count: s.latency.count(), Errors: s.errors.Load()}
		if o.Count == 0 && o.Errors == 0 {
			continue
		}
		o.p50, o.p99, o.p999 = s.latency.quantile(0.50), s.latency.quantile(0.99), s.latency.quantile(0.999)
		o.max = s.latency.quantile(1)
		o.P50Ms, o.P99Ms, o.P999Ms, o.MaxMs = ms(o.p50), ms(o.p99), ms(o.p999), ms(o.max)
		if elapsed > 0 {
			o.OpsPerSec = float64(o.Count) / elapsed.Seconds()
		}
		if o.Errors > 0 {
			o.ErrorKinds = s.errorKinds()
		}
		rep.total += o.Count
		rep.failed += o.Errors
		rep.Ops = append(rep.Ops, o)
	}
	return rep
}

// print writes the report as text.
func (rep *benchReport) print(e *env) {
	fmt.Fprintf(e.stdout, "elapsed %v\n", rep.elapsed.Round(time.Millisecond))
	if rep.WarmUpErrors > 0 {
		fmt.Fprintf(e.stdout, "warm-up: %d acquisitions failed\n", rep.WarmUpErrors)
	}
	fmt.Fprintln(e.stdout)
	w := e.table()
	row(w, "OP", "COUNT", "ERRORS", "OPS/S", "P50", "P99", "P99.9", "MAX")
	for _, o := range rep.Ops {
		row(w, o.Op, o.Count, o.Errors, fmt.Sprintf("%.0f", o.OpsPerSec),
			latency(o.p50), latency(o.p99), latency(o.p999), latency(o.max))
	}
	var rate float64
	if rep.elapsed > 0 {
		rate = float64(rep.total) / rep.elapsed.Seconds()
	}
	row(w, "total", rep.total, rep.failed, fmt.Sprintf("%.0f", rate))
	w.Flush()
	for _, o := range rep.Ops {
		if len(o.ErrorKinds) == 0 {
			continue
		}
		fmt.Fprintf(e.stdout, "%s errors:", o.Op)
		for _, k := range slices.Sorted(maps.Keys(o.ErrorKinds)) {
			fmt.Fprintf(e.stdout, " %s=%d", k, o.ErrorKinds[k])
		}
		fmt.Fprintln(e.stdout)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// latency formats a latency with about four significant digits.
func latency(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Millisecond:
		return d.Round(100 * time.Nanosecond).String()
	case d < time.Second:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}
