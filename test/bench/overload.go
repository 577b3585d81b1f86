package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// OverloadOptions configure the overload runs: `tenure bench -op renew`
// of Clients × Keys leases, closed loop (each client renews as soon as
// its last renewal answered), against a fresh three-server cluster.
type OverloadOptions struct {
	TenureBin  string
	Clients    []int
	Keys       int
	Duration   time.Duration
	Runs       int
	TenureArgs []string // extra `tenure server` flags
}

// OverloadRun is what one run found: the bench's report, the elections
// (the rise of the leader's Raft term) and the leader step-downs for
// want of a quorum that the servers logged.
type OverloadRun struct {
	Clients   int
	Keys      int
	Report    BenchReport
	Elections uint64
	StepDowns int
}

// BenchReport is the part of `tenure bench -json` the overload report
// reads (cmd/tenure's benchReport, which a module outside the server's
// cannot import).
type BenchReport struct {
	ElapsedSeconds float64   `json:"elapsed_seconds"`
	WarmUpErrors   uint64    `json:"warm_up_errors"`
	Ops            []BenchOp `json:"ops"`
}

// BenchOp is one operation's line of a BenchReport.
type BenchOp struct {
	Op         string            `json:"op"`
	Count      uint64            `json:"count"`
	Errors     uint64            `json:"errors"`
	OpsPerSec  float64           `json:"ops_per_sec"`
	P50Ms      float64           `json:"p50_ms"`
	P99Ms      float64           `json:"p99_ms"`
	P999Ms     float64           `json:"p999_ms"`
	MaxMs      float64           `json:"max_ms"`
	ErrorKinds map[string]uint64 `json:"error_kinds"`
}

// RunOverload makes Runs runs for each client count, each against a new
// cluster under dir, and returns them in order. Every server it starts is
// killed before it returns.
func RunOverload(ctx context.Context, o OverloadOptions, dir string, progress io.Writer) ([]OverloadRun, error) {
	var runs []OverloadRun
	for _, clients := range o.Clients {
		for i := 1; i <= o.Runs; i++ {
			fmt.Fprintf(progress, "%d clients × %d keys, run %d/%d\n", clients, o.Keys, i, o.Runs)
			r, err := overloadRun(ctx, o, clients, filepath.Join(dir, fmt.Sprintf("overload-%d-%d", clients, i)))
			if err != nil {
				return runs, fmt.Errorf("%d clients, run %d: %w", clients, i, err)
			}
			fmt.Fprintf(progress, "  %s\n", r.summary())
			runs = append(runs, r)
		}
	}
	return runs, nil
}

func overloadRun(ctx context.Context, o OverloadOptions, clients int, dir string) (OverloadRun, error) {
	ps := &procs{}
	defer ps.killAll()
	defer os.RemoveAll(dir)
	t := &Tenure{Bin: o.TenureBin, Dir: dir, Extra: o.TenureArgs}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return OverloadRun{}, err
	}
	if err := t.Start(ps); err != nil {
		return OverloadRun{}, err
	}
	before, err := t.term()
	if err != nil {
		return OverloadRun{}, err
	}
	cmd := exec.CommandContext(ctx, o.TenureBin, "bench", "-json", "-http-addr", strings.Join(t.Addrs(), ","),
		"-clients", fmt.Sprint(clients), "-keys", fmt.Sprint(o.Keys), "-op", "renew", "-duration", o.Duration.String())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	runErr := cmd.Run()
	r := OverloadRun{Clients: clients, Keys: o.Keys}
	if err := json.Unmarshal(out.Bytes(), &r.Report); err != nil {
		return r, fmt.Errorf("tenure bench: %v (%v): %s", err, runErr, errOut.String())
	}
	after, err := t.term()
	if err != nil {
		return r, err
	}
	r.Elections = after - before
	for _, n := range t.nodes {
		b, err := os.ReadFile(n.p.log)
		if err != nil {
			return r, err
		}
		r.StepDowns += bytes.Count(b, []byte("failed to contact quorum of nodes, stepping down"))
	}
	return r, nil
}

// term is the highest Raft term the running servers report, once they
// agree on an established leader.
func (t *Tenure) term() (uint64, error) {
	if err := t.WaitReady(time.Minute); err != nil {
		return 0, err
	}
	var term uint64
	for _, n := range t.nodes {
		st, err := t.status(n)
		if err != nil {
			return 0, err
		}
		term = max(term, st.Term)
	}
	return term, nil
}

// renew is the run's line of renewals (zero if it has none).
func (r OverloadRun) renew() BenchOp {
	for _, op := range r.Report.Ops {
		if op.Op == "renew" {
			return op
		}
	}
	return BenchOp{}
}

func (r OverloadRun) summary() string {
	op := r.renew()
	return fmt.Sprintf("%d renewals (%.0f/s), %d failed %s; p50 %.1f ms, p99 %.1f ms; %d elections, %d step-downs",
		op.Count, op.OpsPerSec, op.Errors, fmtKinds(op.ErrorKinds), op.P50Ms, op.P99Ms, r.Elections, r.StepDowns)
}

func fmtKinds(kinds map[string]uint64) string {
	if len(kinds) == 0 {
		return "–"
	}
	var ks []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		ks = append(ks, fmt.Sprintf("%s %d", k, kinds[k]))
	}
	return strings.Join(ks, ", ")
}

// WriteOverload writes the runs as a Markdown table.
func WriteOverload(w io.Writer, runs []OverloadRun) {
	fmt.Fprintln(w, "| clients × keys | run | renewals | renewals/s | failed, by kind | p50 / p99 / p99.9 / max ms | elections | step-downs |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	n := map[int]int{}
	for _, r := range runs {
		n[r.Clients]++
		op := r.renew()
		failed := fmt.Sprint(op.Errors)
		if op.Errors > 0 {
			failed += " (" + fmtKinds(op.ErrorKinds) + ")"
		}
		fmt.Fprintf(w, "| %d × %d | %d | %d | %.0f | %s | %.1f / %.1f / %.1f / %.1f | %d | %d |\n",
			r.Clients, r.Keys, n[r.Clients], op.Count, op.OpsPerSec, failed, op.P50Ms, op.P99Ms, op.P999Ms, op.MaxMs, r.Elections, r.StepDowns)
	}
}
