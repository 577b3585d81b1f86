package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Fsync holds the machine's write+fsync latency percentiles.
type Fsync struct {
	Dir            string
	N              int
	P50, P99, P999 time.Duration
}

// MeasureFsync writes 4 KiB and fsyncs it n times in a file under dir (the
// filesystem of the data dirs) and returns the latency percentiles.
func MeasureFsync(dir string, n int) (Fsync, error) {
	f, err := os.CreateTemp(dir, "fsync-")
	if err != nil {
		return Fsync{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	ds := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if _, err := f.Write(buf); err != nil {
			return Fsync{}, err
		}
		if err := f.Sync(); err != nil {
			return Fsync{}, err
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	return Fsync{Dir: dir, N: n, P50: percentile(ds, 0.5), P99: percentile(ds, 0.99), P999: percentile(ds, 0.999)}, nil
}

// Machine describes where the run happened.
func Machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s, %d CPUs (%s), %s/%s, %s", host, runtime.NumCPU(), cpu, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

func fmtValue(v float64, unit string) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f %s", v, unit)
	default:
		return fmt.Sprintf("%.2f %s", v, unit)
	}
}

func fmtLat(r Result) string {
	if r.P50 == 0 {
		return "–"
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }
	return ms(r.P50) + " / " + ms(r.P99) + " / " + ms(r.P999)
}

// WriteTable writes the Markdown table of the rows: medians of the rounds,
// the ratio tenure/etcd, and the latency percentiles of one call in ms.
func WriteTable(w io.Writer, rows []*Row) {
	fmt.Fprintln(w, "| workload | tenure | etcd | ratio tenure/etcd | better | tenure p50 / p99 / p99.9 ms | etcd p50 / p99 / p99.9 ms | errors tenure, etcd |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		t, okT := medianOf(r.TenureRuns)
		e, okE := medianOf(r.EtcdRuns)
		better := "lower"
		if r.HigherBetter {
			better = "higher"
		}
		tv, ev, ratio, el := "–", "–", "–", "–"
		if okT {
			tv = fmtValue(t.Value, r.Unit)
		}
		if okE {
			ev, el = fmtValue(e.Value, r.Unit), fmtLat(e)
		}
		if x := r.Ratio(); x > 0 {
			ratio = fmt.Sprintf("%.2f×", x)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %d, %d |\n",
			r.Name, tv, ev, ratio, better, fmtLat(t), el, t.Errors, e.Errors)
	}
}

// WriteResults writes the results file: the command, the machine, the
// fsync percentiles, then for each section (arm) its heading, its table,
// each round's figures and the first error of each system.
func WriteResults(w io.Writer, sections []*Section, o Options, fs Fsync, command string, started time.Time, runErr error) {
	fmt.Fprintf(w, "# tenure against etcd, %s\n\n", started.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "- command: `%s`\n", command)
	fmt.Fprintf(w, "- machine: %s\n", Machine())
	fmt.Fprintf(w, "- fsync (write 4 KiB + fsync, %d times, in %s): p50 %v, p99 %v, p99.9 %v\n",
		fs.N, fs.Dir, fs.P50.Round(time.Microsecond), fs.P99.Round(time.Microsecond), fs.P999.Round(time.Microsecond))
	fmt.Fprintf(w, "- %d round(s) of %v per workload and system, alternating tenure and etcd; figures are medians of the rounds\n", o.Rounds, o.Duration)
	if o.TenureOnly {
		fmt.Fprintln(w, "- tenure only: no etcd was run")
	} else {
		conns := "each client its own connection"
		if o.EtcdConns > 0 {
			conns = fmt.Sprintf("the clients of a run share %d connections, round robin", o.EtcdConns)
		}
		tconns := "each its own client.Client"
		if o.TenureConns > 0 {
			tconns = fmt.Sprintf("the clients of a run share %d client.Clients, round robin", o.TenureConns)
		}
		if o.TenureNoStream {
			tconns += ", the request stream off (a request per call)"
		} else {
			tconns += ", the request stream on (the Go client's default)"
		}
		fmt.Fprintf(w, "- each arm has fresh three-node clusters of both systems (tenure at its default timings); etcd load clients: %s; tenure's: %s\n", conns, tconns)
	}
	if runErr != nil {
		fmt.Fprintf(w, "- **the run stopped early**: %v\n", runErr)
	}
	for _, s := range sections {
		fmt.Fprintln(w)
		if s.Arm.Name != "" {
			fmt.Fprintf(w, "## Against %s\n\n", s.Arm.Name)
		}
		WriteTable(w, s.Rows)
		fmt.Fprintln(w, "\nEach round (tenure; etcd):")
		fmt.Fprintln(w)
		writeRounds(w, s.Rows)
	}
}

func writeRounds(w io.Writer, rows []*Row) {
	for _, r := range rows {
		var ts, es []string
		for _, x := range r.TenureRuns {
			ts = append(ts, fmtValue(x.Value, r.Unit))
		}
		for _, x := range r.EtcdRuns {
			es = append(es, fmtValue(x.Value, r.Unit))
		}
		fmt.Fprintf(w, "- %s: %s; %s\n", r.Name, strings.Join(ts, ", "), strings.Join(es, ", "))
		for _, x := range r.TenureRuns {
			if x.FirstErr != "" {
				fmt.Fprintf(w, "  - tenure error: %s\n", x.FirstErr)
				break
			}
		}
		for _, x := range r.EtcdRuns {
			if x.FirstErr != "" {
				fmt.Fprintf(w, "  - etcd error: %s\n", x.FirstErr)
				break
			}
		}
	}
}

// ReadResults reads back what a results file says: its first heading and
// the rows of its first table (as WriteTable wrote them; with arms, the
// first arm's), each with its name,
// unit, direction and the medians of tenure and etcd as one run each (the
// rounds and latencies are not read). A figure shown as "–" gives no run.
func ReadResults(r io.Reader) (title string, rows []*Row, err error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if h, ok := strings.CutPrefix(line, "# "); ok && title == "" {
			title = h
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if !strings.HasPrefix(line, "|") || len(cells) < 5 {
			if len(rows) > 0 {
				break // the end of the first table
			}
			continue
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		better := cells[4]
		if better != "higher" && better != "lower" {
			continue // the header and the separator
		}
		row := &Row{Workload: Workload{Name: cells[0], HigherBetter: better == "higher"}}
		for i, runs := range []*[]Result{&row.TenureRuns, &row.EtcdRuns} {
			if cells[1+i] == "–" {
				continue
			}
			num, unit, _ := strings.Cut(cells[1+i], " ")
			v, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return "", nil, fmt.Errorf("row %q: figure %q: %w", cells[0], cells[1+i], err)
			}
			*runs = []Result{{Value: v}}
			row.Unit = unit
		}
		rows = append(rows, row)
	}
	return title, rows, sc.Err()
}

// ResultsPath is <dir>/<date>.md, or <dir>/<date>-<n>.md when that exists.
func ResultsPath(dir string, t time.Time) string {
	base := filepath.Join(dir, t.UTC().Format("2006-01-02"))
	p := base + ".md"
	for n := 2; ; n++ {
		if _, err := os.Stat(p); os.IsNotExist(err) {
			return p
		}
		p = fmt.Sprintf("%s-%d.md", base, n)
	}
}
