// Command benchcompare runs tenure and etcd side by side on loopback: a
// three-node cluster of each, the same workloads against both, alternating
// tenure and etcd for each round, and prints the medians, their ratios and
// the latency percentiles; it writes them, with the machine's fsync
// latency, to test/bench/results/<date>.md and the ratios as a chart to
// <date>.svg beside it.
//
//	make bench-compare                  # the full comparison, about 10 minutes
//	go run ./cmd/benchcompare -tenure-only -duration 2s -rounds 1 -no-results
//
// (the second from test/bench, as `make test` does). Every server it starts
// is killed when it ends, also on failure and on Ctrl-C, and its data dirs
// are removed.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tenure-io/tenure/test/bench"
)

func main() {
	os.Exit(run())
}

func run() int {
	var o bench.Options
	var memory, tenureArgs, etcds string
	var noResults bool
	var resultsDir, redraw string
	flag.StringVar(&o.TenureBin, "tenure", "", "the tenure binary (default: built from the module into a temp dir)")
	flag.StringVar(&etcds, "etcd", "", "the etcd binaries, comma-separated, each measured in every arm (default: etcd from PATH, the etcd-server package)")
	flag.IntVar(&o.EtcdConns, "etcd-conns", 8, "connections the etcd clients of a load run share (0: one per client)")
	flag.IntVar(&o.TenureConns, "tenure-conns", 0, "client.Clients the tenure clients of a load run share (0: one per client)")
	flag.BoolVar(&o.TenureNoStream, "tenure-no-stream", false, "turn the Go client's request stream off: a request per call")
	flag.StringVar(&o.Arm, "arm", "", "run only the etcd arms whose name contains this (case-insensitive), e.g. \"leader's endpoint\"")
	flag.BoolVar(&o.TenureOnly, "tenure-only", false, "run the workloads against tenure alone (no etcd needed)")
	flag.DurationVar(&o.Duration, "duration", 10*time.Second, "measured time of each run of each workload")
	flag.IntVar(&o.Rounds, "rounds", 3, "rounds; each runs every workload against tenure, then etcd")
	flag.IntVar(&o.BulkLeases, "bulk-leases", 1000, "leases of each of the 64 holders of the bulk renewal")
	flag.IntVar(&o.FailoverLeases, "failover-leases", 0, "also measure failover with this many live leases (e.g. 200000; slow)")
	flag.StringVar(&memory, "memory-leases", "", "also measure follower memory per lease at these counts, comma-separated (e.g. 200000,1000000; slow)")
	flag.StringVar(&o.Only, "only", "", "run only the workloads whose name contains this (case-insensitive)")
	flag.StringVar(&tenureArgs, "tenure-args", "", "extra `tenure server` flags, space-separated")
	flag.StringVar(&resultsDir, "results", "", "where the results file and chart go (default: test/bench/results of the module)")
	flag.BoolVar(&noResults, "no-results", false, "print the table only, write no results file")
	flag.BoolVar(&o.Strict, "strict", false, "stop, and fail, at the first run in which a call failed")
	flag.StringVar(&redraw, "redraw", "", "run nothing: draw again the chart of this results file (`results/<date>.md`) from its table")
	flag.Parse()
	if flag.NArg() > 0 {
		return usage(fmt.Errorf("unexpected argument %q", flag.Arg(0)))
	}
	if redraw != "" {
		if err := redrawChart(redraw); err != nil {
			return fail(err)
		}
		return 0
	}
	for _, f := range strings.Split(memory, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return usage(fmt.Errorf("-memory-leases: %q is not a count", f))
		}
		o.MemoryLeases = append(o.MemoryLeases, n)
	}
	o.TenureArgs = strings.Fields(tenureArgs)

	root, err := moduleRoot()
	if err != nil {
		return fail(err)
	}
	for _, b := range strings.Split(etcds, ",") {
		if b = strings.TrimSpace(b); b != "" {
			o.EtcdBins = append(o.EtcdBins, b)
		}
	}
	if !o.TenureOnly && len(o.EtcdBins) == 0 {
		p, err := exec.LookPath("etcd")
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchcompare: etcd not found in PATH (Debian: apt-get install etcd-server; `make bench-compare` does it as root); use -tenure-only to run without it")
			return 1
		}
		o.EtcdBins = []string{p}
	}
	if o.TenureBin == "" {
		o.TenureBin = "(built)"
	}
	if err := o.Validate(); err != nil {
		return usage(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "tenure-bench-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	if o.TenureBin == "(built)" {
		o.TenureBin = filepath.Join(dir, "bin", "tenure") // dir/tenure holds the servers' data
		fmt.Fprintln(os.Stderr, "building tenure")
		build := exec.CommandContext(ctx, "go", "build", "-o", o.TenureBin, "./cmd/tenure")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			return fail(fmt.Errorf("go build ./cmd/tenure: %v\n%s", err, out))
		}
	}

	fs, err := bench.MeasureFsync(dir, 500)
	if err != nil {
		return fail(fmt.Errorf("fsync measurement: %w", err))
	}
	fmt.Fprintf(os.Stderr, "fsync of 4 KiB in %s: p50 %v, p99 %v, p99.9 %v\n", dir, fs.P50, fs.P99, fs.P999)

	started := time.Now()
	sections, runErr := bench.Run(ctx, o, dir, os.Stderr)
	if runErr != nil && len(sections) == 0 {
		return fail(runErr)
	}
	for _, s := range sections {
		if s.Arm.Name != "" {
			fmt.Printf("\nagainst %s:\n", s.Arm.Name)
		}
		bench.WriteTable(os.Stdout, s.Rows)
	}

	if !noResults {
		if resultsDir == "" {
			resultsDir = filepath.Join(root, "test", "bench", "results")
		}
		if err := writeResults(resultsDir, sections, o, fs, started, runErr); err != nil {
			return fail(err)
		}
	}
	if runErr != nil {
		return fail(runErr)
	}
	return 0
}

func writeResults(dir string, sections []*bench.Section, o bench.Options, fs bench.Fsync, started time.Time, runErr error) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	md := bench.ResultsPath(dir, started)
	svg := chartPath(md)
	var b bytes.Buffer
	command := "benchcompare"
	for _, a := range os.Args[1:] {
		if strings.ContainsAny(a, " '\"") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		command += " " + a
	}
	bench.WriteResults(&b, sections, o, fs, command, started, runErr)
	// The chart is of the first arm: the first etcd given, on its
	// leader's endpoint.
	var chart bytes.Buffer
	err := bench.ErrNoRatio
	if len(sections) > 0 {
		title := "tenure against " + sections[0].Arm.Name + ", " + started.UTC().Format("2006-01-02 15:04 MST")
		err = bench.WriteChart(&chart, sections[0].Rows, title, "svg")
	}
	switch {
	case errors.Is(err, bench.ErrNoRatio):
		// Against tenure alone: no chart.
	case err != nil:
		return fmt.Errorf("chart: %w", err)
	default:
		fmt.Fprintf(&b, "\n![tenure's advantage per workload over the first arm's etcd](%s)\n", filepath.Base(svg))
	}
	if err := os.WriteFile(md, b.Bytes(), 0o644); err != nil {
		return err
	}
	if chart.Len() == 0 {
		fmt.Fprintf(os.Stderr, "wrote %s\n", md)
		return nil
	}
	if err := os.WriteFile(svg, chart.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s and %s\n", md, svg)
	return nil
}

// chartPath is where the chart of the results file md goes: beside it, the
// same name ending in .svg.
func chartPath(md string) string {
	return strings.TrimSuffix(md, ".md") + ".svg"
}

// redrawChart draws the chart of the results file md again from its table.
func redrawChart(md string) error {
	f, err := os.Open(md)
	if err != nil {
		return err
	}
	title, rows, err := bench.ReadResults(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", md, err)
	}
	var chart bytes.Buffer
	if err := bench.WriteChart(&chart, rows, title, "svg"); err != nil {
		return fmt.Errorf("%s: %w", md, err)
	}
	svg := chartPath(md)
	if err := os.WriteFile(svg, chart.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", svg)
	return nil
}

// moduleRoot finds the tenure module's root from the working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			sc := bufio.NewScanner(f)
			first := ""
			if sc.Scan() {
				first = strings.TrimSpace(sc.Text())
			}
			f.Close()
			if first == "module github.com/tenure-io/tenure" {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the tenure module (no go.mod of github.com/tenure-io/tenure above the working directory)")
		}
		dir = parent
	}
}

func usage(err error) int { return bench.Usage("benchcompare", err) }

func fail(err error) int { return bench.Fail("benchcompare", err) }
