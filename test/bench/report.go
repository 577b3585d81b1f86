package bench

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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
// fsync percentiles, the table, each round's figures and the first error
// of each system.
func WriteResults(w io.Writer, rows []*Row, o Options, fs Fsync, command string, started time.Time, runErr error) {
	fmt.Fprintf(w, "# tenure against etcd, %s\n\n", started.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "- command: `%s`\n", command)
	fmt.Fprintf(w, "- machine: %s\n", Machine())
	fmt.Fprintf(w, "- fsync (write 4 KiB + fsync, %d times, in %s): p50 %v, p99 %v, p99.9 %v\n",
		fs.N, fs.Dir, fs.P50.Round(time.Microsecond), fs.P99.Round(time.Microsecond), fs.P999.Round(time.Microsecond))
	fmt.Fprintf(w, "- %d round(s) of %v per workload and system, alternating tenure and etcd; figures are medians of the rounds\n", o.Rounds, o.Duration)
	if o.TenureOnly {
		fmt.Fprintln(w, "- tenure only: no etcd was run")
	}
	if runErr != nil {
		fmt.Fprintf(w, "- **the run stopped early**: %v\n", runErr)
	}
	fmt.Fprintln(w)
	WriteTable(w, rows)
	fmt.Fprintln(w, "\nEach round (tenure; etcd):")
	fmt.Fprintln(w)
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

// WriteSVG draws the ratios as horizontal bars of tenure's advantage
// (the ratio where higher is better, its inverse where lower is better),
// on a log scale from 1/16 to 16, with 1× marked.
func WriteSVG(w io.Writer, rows []*Row, title string) {
	const (
		barH, gap, width, top = 18, 8, 420, 40
		lo, hi                = -4.0, 4.0 // log2 of 1/16 and 16
	)
	var shown []*Row
	left := 200 // room for the longest label, about 6.5 px a character
	for _, r := range rows {
		if r.Ratio() > 0 {
			shown = append(shown, r)
			left = max(left, len([]rune(r.Name))*13/2+20)
		}
	}
	height := top + len(shown)*(barH+gap) + 40
	x := func(v float64) float64 {
		l := max(lo, min(hi, log2(v)))
		return float64(left) + (l-lo)/(hi-lo)*width
	}
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", left+width+80, height)
	fmt.Fprintf(w, `<text x="10" y="20" font-size="14">%s</text>`+"\n", xmlEscape(title))
	for i, tick := range []float64{1.0 / 16, 0.25, 1, 4, 16} {
		fmt.Fprintf(w, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x(tick), top-5, x(tick), height-30,
			map[bool]string{true: "black", false: "#ccc"}[i == 2])
		fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">%s×</text>`+"\n", x(tick), height-15, trimFloat(tick))
	}
	for i, r := range shown {
		adv := r.Ratio()
		if !r.HigherBetter {
			adv = 1 / adv
		}
		y := top + i*(barH+gap)
		x0, x1 := x(1), x(adv)
		color := "#2a7"
		if adv < 1 {
			x0, x1, color = x1, x0, "#d54"
		}
		fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+13, xmlEscape(r.Name))
		fmt.Fprintf(w, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", x0, y, max(x1-x0, 1), barH, color)
		fmt.Fprintf(w, `<text x="%.1f" y="%d">%.2f×</text>`+"\n", max(x0, x1)+4, y+13, adv)
	}
	fmt.Fprintln(w, `</svg>`)
}

func log2(v float64) float64 {
	if v <= 0 {
		return -64
	}
	return math.Log2(v)
}

func trimFloat(v float64) string {
	if v < 1 {
		return fmt.Sprintf("1/%.0f", 1/v)
	}
	return fmt.Sprintf("%.0f", v)
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
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
