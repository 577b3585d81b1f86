package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Options configure a comparison.
type Options struct {
	TenureBin string // the tenure binary
	EtcdBin   string // etcd; "" with TenureOnly
	// TenureOnly runs the workloads against tenure alone (no etcd needed).
	TenureOnly bool
	// Duration is the measured time of one run of one workload.
	Duration time.Duration
	Rounds   int
	// BulkLeases is the number of leases of each of the 64 bulk holders.
	BulkLeases int
	// FailoverLeases, when positive, adds the failover with that many live
	// leases; MemoryLeases adds the follower memory per lease at each
	// count.
	FailoverLeases int
	MemoryLeases   []int
	// Only, when not empty, keeps the workloads whose name contains it.
	Only string
	// TenureArgs are extra `tenure server` flags.
	TenureArgs []string
}

// Validate names the first bad option.
func (o *Options) Validate() error {
	switch {
	case o.Duration <= 0:
		return fmt.Errorf("-duration must be positive, got %v", o.Duration)
	case o.Rounds < 1:
		return fmt.Errorf("-rounds must be at least 1, got %d", o.Rounds)
	case o.BulkLeases < 1 || o.BulkLeases > 100000:
		return fmt.Errorf("-bulk-leases must be in [1, 100000], got %d", o.BulkLeases)
	case o.FailoverLeases < 0:
		return fmt.Errorf("-failover-leases must not be negative, got %d", o.FailoverLeases)
	case o.TenureBin == "":
		return errors.New("-tenure: the tenure binary is required")
	case !o.TenureOnly && o.EtcdBin == "":
		return errors.New("-etcd: the etcd binary is required without -tenure-only")
	}
	for _, n := range o.MemoryLeases {
		if n < 1 {
			return fmt.Errorf("-memory-leases: counts must be positive, got %d", n)
		}
	}
	return nil
}

// Row is one workload's figures: the results of every round for each
// system, and their medians.
type Row struct {
	Workload
	TenureRuns, EtcdRuns []Result
}

// median of a system's rounds: the median value, the median percentiles,
// the errors summed.
func medianOf(rs []Result) (Result, bool) {
	if len(rs) == 0 {
		return Result{}, false
	}
	var vs []float64
	var p50, p99, p999 []time.Duration
	var m Result
	for _, r := range rs {
		vs = append(vs, r.Value)
		p50, p99, p999 = append(p50, r.P50), append(p99, r.P99), append(p999, r.P999)
		m.Errors += r.Errors
		if m.FirstErr == "" {
			m.FirstErr = r.FirstErr
		}
	}
	m.Value = median(vs)
	m.P50, m.P99, m.P999 = medianDur(p50), medianDur(p99), medianDur(p999)
	return m, true
}

// Ratio is tenure's median over etcd's; 0 when either is missing.
func (r *Row) Ratio() float64 {
	t, ok1 := medianOf(r.TenureRuns)
	e, ok2 := medianOf(r.EtcdRuns)
	if !ok1 || !ok2 || e.Value == 0 {
		return 0
	}
	return t.Value / e.Value
}

// Run starts the clusters under dir, runs every workload Rounds times
// against each system, alternating tenure and etcd, and returns the rows.
// Every process it starts is killed before it returns, also when ctx is
// cancelled (an interrupt) or a run fails.
func Run(ctx context.Context, o Options, dir string, progress io.Writer) ([]*Row, error) {
	ps := &procs{}
	defer ps.killAll()
	if _, ok := progress.(*syncWriter); !ok {
		progress = &syncWriter{w: progress}
	}
	t := &Tenure{Bin: o.TenureBin, Dir: filepath.Join(dir, "tenure"), Extra: o.TenureArgs}
	if err := os.MkdirAll(t.Dir, 0o755); err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "starting three tenure servers in %s\n", t.Dir)
	if err := t.Start(ps); err != nil {
		return nil, fmt.Errorf("tenure: %w", err)
	}
	var e *Etcd
	if !o.TenureOnly {
		e = &Etcd{Bin: o.EtcdBin, Dir: filepath.Join(dir, "etcd")}
		if err := os.MkdirAll(e.Dir, 0o755); err != nil {
			return nil, err
		}
		fmt.Fprintf(progress, "starting three etcd members in %s\n", e.Dir)
		if err := e.Start(ps); err != nil {
			return nil, fmt.Errorf("etcd: %w", err)
		}
	}

	var rows []*Row
	for _, w := range Workloads(o) {
		if o.Only == "" || containsFold(w.Name, o.Only) {
			rows = append(rows, &Row{Workload: w})
		}
	}
	// By phase: workloads that need a population run after the others,
	// by population, since populations only grow; see Workload.Phase.
	slices.SortStableFunc(rows, func(a, b *Row) int {
		if a.Phase != b.Phase {
			return a.Phase - b.Phase
		}
		return a.Population - b.Population
	})
	env := &Env{Options: o, Progress: progress, runCtx: ctx, st: &state{}}
	total := len(rows) * o.Rounds
	if e != nil {
		total *= 2
	}
	done := 0
	started := time.Now()
	for lo := 0; lo < len(rows); {
		hi := lo
		for hi < len(rows) && rows[hi].Phase == rows[lo].Phase && rows[hi].Population == rows[lo].Population {
			hi++
		}
		for round := 1; round <= o.Rounds; round++ {
			for _, row := range rows[lo:hi] {
				for _, sys := range []string{"tenure", "etcd"} {
					if sys == "etcd" && e == nil {
						continue
					}
					done++
					env.run++
					env.label = fmt.Sprintf("[%d/%d, %s] round %d/%d %s, %s", done, total,
						time.Since(started).Round(time.Second), round, o.Rounds, row.Name, sys)
					fmt.Fprintln(progress, env.label)
					var r Result
					var err error
					if sys == "tenure" {
						r, err = row.Tenure(ctx, env, t)
					} else {
						r, err = row.Etcd(ctx, env, e)
					}
					if err != nil {
						return rows, fmt.Errorf("%s, %s, round %d: %w", row.Name, sys, round, err)
					}
					if sys == "tenure" {
						row.TenureRuns = append(row.TenureRuns, r)
					} else {
						row.EtcdRuns = append(row.EtcdRuns, r)
					}
				}
			}
		}
		for _, row := range rows[lo:hi] {
			if row.After != nil {
				if err := row.After(ctx, env, t, e); err != nil {
					return rows, fmt.Errorf("%s, clean-up: %w", row.Name, err)
				}
			}
		}
		lo = hi
	}
	return rows, nil
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
