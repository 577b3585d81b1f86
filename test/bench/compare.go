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
	// EtcdBins are the etcd binaries, each measured in every arm (Arms);
	// empty with TenureOnly.
	EtcdBins []string
	// EtcdConns is Etcd.Conns of the load arms.
	EtcdConns int
	// TenureConns is Tenure.Conns and TenureNoStream Tenure.NoStream.
	TenureConns    int
	TenureNoStream bool
	// Arm, when not empty, keeps the arms whose name contains it.
	Arm string
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
	// Strict stops the comparison at the first run with an error (the
	// check of `make test`, where any error is a broken workload).
	Strict bool
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
	case !o.TenureOnly && len(o.EtcdBins) == 0:
		return errors.New("-etcd: an etcd binary is required without -tenure-only")
	case o.EtcdConns < 0:
		return fmt.Errorf("-etcd-conns must not be negative, got %d", o.EtcdConns)
	case o.TenureConns < 0:
		return fmt.Errorf("-tenure-conns must not be negative, got %d", o.TenureConns)
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

// Arm is one configuration of etcd that tenure is measured against, in
// its own section of the results, with its own three-node etcd cluster.
type Arm struct {
	// Name says which etcd and how it is configured.
	Name    string
	Bin     string
	Version string
	// LeaderOnly puts the load's clients on the leader's endpoint (etcd at
	// its best); otherwise on every member's, as users often configure
	// it.
	LeaderOnly bool
	// Failover: the arm measures the failovers (and the populations),
	// not the load workloads.
	Failover bool
	// TenureTimings runs etcd at tenure's default Raft timings (20 ms
	// heartbeat, 100 ms election timeout) and bounds each failover probe
	// attempt by 100 ms for both systems; only the failovers are measured
	// (with -failover-leases, also the one with that many live leases).
	TenureTimings bool
}

// takes says whether the arm measures the workload.
func (a Arm) takes(w Workload) bool {
	switch {
	case !a.Failover:
		return w.Phase == 0 || w.Phase == 2
	case a.TenureTimings:
		return w.Failover
	default:
		return w.Phase == 1 || w.Phase == 3
	}
}

// Arms are the arms of each etcd binary (version its version), in report
// order: the load on the leader's endpoint, the load on every endpoint,
// the failovers at etcd's defaults and at tenure's timings.
func Arms(bin, version string) []Arm {
	name := "etcd " + version
	return []Arm{
		{Name: name + ", clients on the leader's endpoint", Bin: bin, Version: version, LeaderOnly: true},
		{Name: name + ", clients on every endpoint", Bin: bin, Version: version},
		{Name: name + ", failover at each system's default timings", Bin: bin, Version: version, Failover: true},
		{Name: name + ", failover with etcd at tenure's Raft timings (heartbeat 20 ms, election 100 ms) and 100 ms probe attempts", Bin: bin, Version: version, Failover: true, TenureTimings: true},
	}
}

// Section is one arm's rows (tenure alone: an arm without a name).
type Section struct {
	Arm  Arm
	Rows []*Row
}

// Run starts, for each arm of each etcd binary in turn, a tenure cluster
// and an etcd cluster under dir; it runs the arm's workloads Rounds times
// against each, alternating tenure and etcd, and returns a section per
// arm. Every process it starts is killed before it returns, also when
// ctx is cancelled (an interrupt) or a run fails.
func Run(ctx context.Context, o Options, dir string, progress io.Writer) ([]*Section, error) {
	ps := &procs{}
	defer ps.killAll()
	if _, ok := progress.(*syncWriter); !ok {
		progress = &syncWriter{w: progress}
	}
	arms := []Arm{{}}
	if !o.TenureOnly {
		arms = nil
		for _, bin := range o.EtcdBins {
			v, err := EtcdVersion(bin)
			if err != nil {
				return nil, err
			}
			for _, a := range Arms(bin, v) {
				if o.Arm == "" || containsFold(a.Name, o.Arm) {
					arms = append(arms, a)
				}
			}
		}
	}
	env := &Env{Options: o, Progress: progress, runCtx: ctx, st: &state{}}
	var sections []*Section
	started := time.Now()
	for i, arm := range arms {
		s := &Section{Arm: arm}
		for _, w := range Workloads(o) {
			if (o.Only == "" || containsFold(w.Name, o.Only)) && (arm.Name == "" || arm.takes(w)) {
				s.Rows = append(s.Rows, &Row{Workload: w})
			}
		}
		if len(s.Rows) == 0 {
			continue
		}
		sections = append(sections, s)
		// Each arm has fresh clusters of both systems: nothing one arm
		// leaves (a population of leases, a grown log) weighs on the
		// next.
		env.st = &state{}
		t := &Tenure{Bin: o.TenureBin, Dir: filepath.Join(dir, fmt.Sprintf("tenure-%d", i)), Extra: o.TenureArgs,
			Conns: o.TenureConns, NoStream: o.TenureNoStream}
		if err := os.MkdirAll(t.Dir, 0o755); err != nil {
			return sections, err
		}
		fmt.Fprintf(progress, "arm %d/%d: starting three tenure servers in %s\n", i+1, len(arms), t.Dir)
		if err := t.Start(ps); err != nil {
			return sections, fmt.Errorf("tenure: %w", err)
		}
		var e *Etcd
		if arm.Name != "" {
			e = &Etcd{Bin: arm.Bin, Dir: filepath.Join(dir, fmt.Sprintf("etcd-%d", i)), Label: arm.Name, LeaderOnly: arm.LeaderOnly}
			if !arm.Failover {
				e.Conns = o.EtcdConns
			}
			if arm.TenureTimings {
				e.HeartbeatMS, e.ElectionMS = 20, 100
			}
			if err := os.MkdirAll(e.Dir, 0o755); err != nil {
				return sections, err
			}
			fmt.Fprintf(progress, "arm %d/%d: %s: starting three etcd members in %s\n", i+1, len(arms), arm.Name, e.Dir)
			if err := e.Start(ps); err != nil {
				return sections, fmt.Errorf("%s: %w", arm.Name, err)
			}
		}
		actx, endArm := context.WithCancel(ctx)
		env.armCtx, env.arm = actx, arm
		err := runArm(ctx, env, s.Rows, t, e, started)
		endArm()
		if stopErr := t.Stop(); err == nil && stopErr != nil {
			err = fmt.Errorf("tenure: stop: %w", stopErr)
		}
		if e != nil {
			if stopErr := e.Stop(); err == nil && stopErr != nil {
				err = fmt.Errorf("%s: stop: %w", arm.Name, stopErr)
			}
		}
		if err != nil {
			if arm.Name != "" {
				err = fmt.Errorf("%s: %w", arm.Name, err)
			}
			return sections, err
		}
	}
	return sections, nil
}

// runArm runs rows Rounds times against t and e (nil: tenure alone),
// alternating them.
func runArm(ctx context.Context, env *Env, rows []*Row, t *Tenure, e *Etcd, started time.Time) error {
	// By phase: workloads that need a population run after the others,
	// by population, since populations only grow; see Workload.Phase.
	slices.SortStableFunc(rows, func(a, b *Row) int {
		if a.Phase != b.Phase {
			return a.Phase - b.Phase
		}
		return a.Population - b.Population
	})
	total := len(rows) * env.Rounds
	if e != nil {
		total *= 2
	}
	done := 0
	for lo := 0; lo < len(rows); {
		hi := lo
		for hi < len(rows) && rows[hi].Phase == rows[lo].Phase && rows[hi].Population == rows[lo].Population {
			hi++
		}
		for round := 1; round <= env.Rounds; round++ {
			for _, row := range rows[lo:hi] {
				for _, sys := range []string{"tenure", "etcd"} {
					if sys == "etcd" && e == nil {
						continue
					}
					done++
					env.run++
					env.label = fmt.Sprintf("[%d/%d, %s] round %d/%d %s, %s", done, total,
						time.Since(started).Round(time.Second), round, env.Rounds, row.Name, sys)
					fmt.Fprintln(env.Progress, env.label)
					var r Result
					var err error
					if sys == "tenure" {
						r, err = row.Tenure(ctx, env, t)
					} else {
						r, err = row.Etcd(ctx, env, e)
					}
					if err != nil {
						return fmt.Errorf("%s, %s, round %d: %w", row.Name, sys, round, err)
					}
					if env.Strict && r.Errors > 0 {
						return fmt.Errorf("%s, %s, round %d: %d calls failed, the first with: %s", row.Name, sys, round, r.Errors, r.FirstErr)
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
					return fmt.Errorf("%s, clean-up: %w", row.Name, err)
				}
			}
		}
		lo = hi
	}
	return nil
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
