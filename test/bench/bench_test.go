package bench

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tenureBin builds the tenure binary once for the tests of this package.
func tenureBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tenure")
	build := exec.Command("go", "build", "-o", bin, "./cmd/tenure")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/tenure: %v\n%s", err, out)
	}
	return bin
}

// processesUnder lists the processes whose command line mentions dir.
func processesUnder(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var found []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if cmd := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(cmd, dir) {
			found = append(found, e.Name()+": "+cmd)
		}
	}
	return found
}

func TestMedianAndPercentile(t *testing.T) {
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median(3,1,2) = %v, want 2", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median(4,1,3,2) = %v, want 2.5", got)
	}
	var ds []time.Duration
	for i := 1; i <= 1000; i++ {
		ds = append(ds, time.Duration(i))
	}
	if p50, p99, p999 := percentile(ds, 0.5), percentile(ds, 0.99), percentile(ds, 0.999); p50 != 501 || p99 != 991 || p999 != 1000 {
		t.Errorf("percentiles of 1..1000 = %v %v %v, want 501 991 1000", p50, p99, p999)
	}
}

func TestOptionsValidateNamesTheFlag(t *testing.T) {
	good := Options{TenureBin: "t", EtcdBins: []string{"e"}, Duration: time.Second, Rounds: 1, BulkLeases: 10}
	for flag, edit := range map[string]func(o *Options){
		"-duration":      func(o *Options) { o.Duration = 0 },
		"-rounds":        func(o *Options) { o.Rounds = 0 },
		"-bulk-leases":   func(o *Options) { o.BulkLeases = 0 },
		"-etcd":          func(o *Options) { o.EtcdBins = nil },
		"-etcd-conns":    func(o *Options) { o.EtcdConns = -1 },
		"-tenure-conns":  func(o *Options) { o.TenureConns = -1 },
		"-memory-leases": func(o *Options) { o.MemoryLeases = []int{-1} },
	} {
		o := good
		edit(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("bad %s: Validate() = %v, want an error naming %s", flag, err, flag)
		}
	}
	if err := good.Validate(); err != nil {
		t.Errorf("good options: %v", err)
	}
	o := good
	o.EtcdBins, o.TenureOnly = nil, true
	if err := o.Validate(); err != nil {
		t.Errorf("-tenure-only without etcd: %v", err)
	}
}

func TestReportRatiosAndTable(t *testing.T) {
	rows := []*Row{
		{Workload: Workload{Name: "faster", Unit: "op/s", HigherBetter: true},
			TenureRuns: []Result{{Value: 300}, {Value: 100}, {Value: 200}}, EtcdRuns: []Result{{Value: 100}, {Value: 50}, {Value: 400}}},
		{Workload: Workload{Name: "failover <kill>", Unit: "ms"},
			TenureRuns: []Result{{Value: 500}}, EtcdRuns: []Result{{Value: 1000}}},
		{Workload: Workload{Name: "tenure only", Unit: "op/s", HigherBetter: true}, TenureRuns: []Result{{Value: 7}}},
	}
	if got := rows[0].Ratio(); got != 2 {
		t.Errorf("ratio of medians 200/100 = %v, want 2", got)
	}
	if got := rows[2].Ratio(); got != 0 {
		t.Errorf("ratio without etcd = %v, want 0", got)
	}
	var table bytes.Buffer
	WriteTable(&table, rows)
	for _, want := range []string{"| faster | 200 op/s | 100 op/s | 2.00× | higher |", "| failover <kill> | 500 ms | 1000 ms | 0.50× | lower |", "| tenure only | 7.00 op/s | – | – |"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
}

// chartRows: two workloads where tenure is better (one where higher is
// better, one where lower is), one where it is worse, one without etcd.
func chartRows() []*Row {
	return []*Row{
		{Workload: Workload{Name: "faster", Unit: "op/s", HigherBetter: true},
			TenureRuns: []Result{{Value: 300}}, EtcdRuns: []Result{{Value: 100}}},
		{Workload: Workload{Name: "failover <kill> & more", Unit: "ms"},
			TenureRuns: []Result{{Value: 500}}, EtcdRuns: []Result{{Value: 1000}}},
		{Workload: Workload{Name: "slower", Unit: "op/s", HigherBetter: true},
			TenureRuns: []Result{{Value: 10}}, EtcdRuns: []Result{{Value: 40}}},
		{Workload: Workload{Name: "tenure only", Unit: "op/s", HigherBetter: true}, TenureRuns: []Result{{Value: 7}}},
	}
}

func TestAdvantageIsAboveOneWhereTenureIsBetter(t *testing.T) {
	for i, want := range []float64{3, 2, 0.25, 0} {
		r := chartRows()[i]
		if got := r.Advantage(); got != want {
			t.Errorf("%s: Advantage() = %v, want %v", r.Name, got, want)
		}
	}
}

func TestChartSVGNamesEveryWorkloadWithARatio(t *testing.T) {
	var svg bytes.Buffer
	if err := WriteChart(&svg, chartRows(), "a & b", "svg"); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&svg)
	var texts []string
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			texts = append(texts, string(tok))
		}
	}
	if root != "svg" {
		t.Errorf("root element %q, want svg", root)
	}
	all := strings.Join(texts, "|")
	for _, want := range []string{"a & b", "faster", "3.00×", "failover <kill> & more", "2.00×", "slower", "0.25×", "1×"} {
		if !strings.Contains(all, want) {
			t.Errorf("chart lacks %q: %s", want, all)
		}
	}
	if strings.Contains(all, "tenure only") {
		t.Errorf("chart shows a workload without a ratio: %s", all)
	}
}

// TestChartPNGHasABarPerWorkload counts the bars of each colour: the
// runs of bar-coloured pixels down the column that crosses most of them.
func TestChartPNGHasABarPerWorkload(t *testing.T) {
	var b bytes.Buffer
	if err := WriteChart(&b, chartRows(), "bars", "png"); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatalf("chart is not a PNG: %v", err)
	}
	for _, tc := range []struct {
		name string
		c    color.Color
		want int
	}{{"better (green)", betterColor, 2}, {"worse (red)", worseColor, 1}} {
		if got := maxRuns(img, tc.c); got != tc.want {
			t.Errorf("%s bars: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// maxRuns is the most runs of pixels of colour c in one column of img.
func maxRuns(img image.Image, c color.Color) int {
	r0, g0, b0, _ := c.RGBA()
	most := 0
	bounds := img.Bounds()
	for x := bounds.Min.X; x < bounds.Max.X; x++ {
		runs, in := 0, false
		for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
			r, g, b, _ := img.At(x, y).RGBA()
			match := r == r0 && g == g0 && b == b0
			if match && !in {
				runs++
			}
			in = match
		}
		most = max(most, runs)
	}
	return most
}

func TestChartWithoutRatios(t *testing.T) {
	if err := WriteChart(io.Discard, chartRows()[3:], "none", "svg"); !errors.Is(err, ErrNoRatio) {
		t.Errorf("WriteChart of rows without etcd = %v, want ErrNoRatio", err)
	}
}

// TestReadResultsReadsWhatWriteResultsWrote: the chart of a results file
// can be drawn again from the file.
func TestReadResultsReadsWhatWriteResultsWrote(t *testing.T) {
	rows := chartRows()
	other := []*Row{{Workload: Workload{Name: "another arm's", Unit: "op/s", HigherBetter: true},
		TenureRuns: []Result{{Value: 1}}, EtcdRuns: []Result{{Value: 2}}}}
	var b bytes.Buffer
	started := time.Date(2026, 11, 24, 10, 44, 0, 0, time.UTC)
	sections := []*Section{{Arm: Arm{Name: "etcd 3.6.16, clients on the leader's endpoint"}, Rows: rows}, {Arm: Arm{Name: "etcd 3.4.23, clients on every endpoint"}, Rows: other}}
	WriteResults(&b, sections, Options{Rounds: 1, Duration: time.Second}, Fsync{}, "benchcompare", started, nil)
	for _, want := range []string{"## Against etcd 3.6.16, clients on the leader's endpoint", "## Against etcd 3.4.23, clients on every endpoint", "| another arm's |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("results lack %q:\n%s", want, b.String())
		}
	}
	title, got, err := ReadResults(&b)
	if err != nil {
		t.Fatal(err)
	}
	if want := "tenure against etcd, 2026-11-24 10:44 UTC"; title != want {
		t.Errorf("title %q, want %q", title, want)
	}
	if len(got) != len(rows) {
		t.Fatalf("read %d rows, want %d", len(got), len(rows))
	}
	for i, r := range rows {
		g := got[i]
		if g.Name != r.Name || g.Unit != r.Unit || g.HigherBetter != r.HigherBetter || g.Advantage() != r.Advantage() ||
			len(g.TenureRuns) != len(r.TenureRuns) || len(g.EtcdRuns) != len(r.EtcdRuns) {
			t.Errorf("row %d: read %+v (advantage %v), want %+v (advantage %v)", i, g, g.Advantage(), r, r.Advantage())
		}
	}
}

func TestMeasureFsync(t *testing.T) {
	fs, err := MeasureFsync(t.TempDir(), 20)
	if err != nil {
		t.Fatal(err)
	}
	if fs.N != 20 || fs.P50 <= 0 || fs.P50 > fs.P99 || fs.P99 > fs.P999 {
		t.Errorf("fsync percentiles %+v: want 20 samples, 0 < p50 <= p99 <= p99.9", fs)
	}
}

// TestRunKillsItsServersOnInterrupt: a run interrupted in the middle of a
// workload returns, and no process it started is left.
func TestRunKillsItsServersOnInterrupt(t *testing.T) {
	bin := tenureBin(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	o := Options{TenureBin: bin, TenureOnly: true, Duration: time.Minute, Rounds: 1, BulkLeases: 1, Only: "64 clients"}
	progress := &syncWriter{}
	go func() {
		// Interrupt once the first workload is under way.
		for !strings.Contains(progress.String(), "round 1/1") {
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
		cancel()
	}()
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, o, dir, progress)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("interrupted run returned no error")
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("interrupted run did not return within 2 minutes")
	}
	if left := processesUnder(t, dir); len(left) > 0 {
		t.Fatalf("processes left after the run:\n%s", strings.Join(left, "\n"))
	}
}

// etcdBin is Debian's etcd from PATH; without it the test skips, or
// fails under CI=true.
func etcdBin(t *testing.T) string {
	t.Helper()
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		msg := "etcd not found in PATH (Debian: apt-get install etcd-server); `make test` and `make bench-compare` install it as root"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return etcd
}

// TestShortComparisonAgainstEtcd runs one workload briefly against both
// systems: both give a figure, without errors, and no process is left.
func TestShortComparisonAgainstEtcd(t *testing.T) {
	etcd := etcdBin(t)
	dir := t.TempDir()
	o := Options{TenureBin: tenureBin(t), EtcdBins: []string{etcd}, EtcdConns: 8, Duration: time.Second, Rounds: 1, BulkLeases: 1,
		Only: "acquire+release, 1 client", Arm: "endpoint"}
	sections, err := Run(context.Background(), o, dir, &syncWriter{})
	if err != nil {
		t.Fatal(err)
	}
	// Two arms take the workload: clients on the leader's endpoint, and
	// on every endpoint; the failover arms do not.
	if len(sections) != 2 || !sections[0].Arm.LeaderOnly || sections[1].Arm.LeaderOnly {
		t.Fatalf("want the leader's-endpoint arm and the every-endpoint arm, got %d sections: %+v", len(sections), sections)
	}
	for _, s := range sections {
		rows := s.Rows
		if len(rows) != 1 || len(rows[0].TenureRuns) != 1 || len(rows[0].EtcdRuns) != 1 {
			t.Fatalf("%s: want one row with one run each, got %+v", s.Arm.Name, rows)
		}
		for sys, r := range map[string]Result{"tenure": rows[0].TenureRuns[0], "etcd": rows[0].EtcdRuns[0]} {
			if r.Value <= 0 || r.Errors > 0 || r.P50 <= 0 {
				t.Errorf("%s, %s: %+v, want acquisitions, latencies and no errors", s.Arm.Name, sys, r)
			}
		}
	}
	if left := processesUnder(t, dir); len(left) > 0 {
		t.Fatalf("processes left after the run:\n%s", strings.Join(left, "\n"))
	}
}

// TestEtcdArmsGiveEtcdItsBest: the leader's-endpoint arm's clients talk
// to the leader alone, the every-endpoint arm's to every member, and an
// arm at tenure's timings runs etcd with them.
func TestEtcdArmsGiveEtcdItsBest(t *testing.T) {
	bin := etcdBin(t)
	ps := &procs{}
	defer ps.killAll()
	e := &Etcd{Bin: bin, Dir: t.TempDir(), LeaderOnly: true, HeartbeatMS: 20, ElectionMS: 100}
	if err := e.Start(ps); err != nil {
		t.Fatal(err)
	}
	l, err := leaderOf("etcd", e.members, e.leads)
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.LoadClient()
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Endpoints(); len(got) != 1 || got[0] != l.client {
		t.Errorf("leader's-endpoint client: endpoints %v, want only the leader's %s", got, l.client)
	}
	c.Close()
	e.LeaderOnly = false
	if c, err = e.LoadClient(); err != nil {
		t.Fatal(err)
	}
	if got := c.Endpoints(); len(got) != 3 {
		t.Errorf("every-endpoint client: endpoints %v, want the 3 members'", got)
	}
	c.Close()
	for _, m := range e.members {
		if args := strings.Join(m.p.args, " "); !strings.Contains(args, "--heartbeat-interval 20 --election-timeout 100") {
			t.Errorf("%s runs with %s, want tenure's timings", m.name, args)
		}
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if left := processesUnder(t, e.Dir); len(left) > 0 {
		t.Fatalf("processes left after Stop:\n%s", strings.Join(left, "\n"))
	}
}

func TestArmsTakeTheirWorkloads(t *testing.T) {
	ws := Workloads(Options{BulkLeases: 10, FailoverLeases: 100, MemoryLeases: []int{100}})
	for _, a := range Arms("etcd", "3.6.16") {
		var names []string
		for _, w := range ws {
			if a.takes(w) {
				names = append(names, w.Name)
			}
		}
		got := strings.Join(names, "; ")
		switch {
		case !a.Failover:
			if !strings.Contains(got, "renew one lease per call") || !strings.Contains(got, "bulk renewal") || strings.Contains(got, "failover") {
				t.Errorf("%s takes %s", a.Name, got)
			}
		case a.TenureTimings:
			if got != "failover: leader kill -9 to first acquisition; failover: leader kill -9 to first acquisition, 100 live leases" {
				t.Errorf("%s takes %s, want the two failovers alone", a.Name, got)
			}
		default:
			if !strings.Contains(got, "100 live leases") || !strings.Contains(got, "follower memory") || strings.Contains(got, "renew") {
				t.Errorf("%s takes %s", a.Name, got)
			}
		}
	}
}

// TestOverloadRunCountsElections: a short overload run reports renewals,
// no failure and no election on an idle machine's cluster, and leaves no
// process.
func TestOverloadRunCountsElections(t *testing.T) {
	dir := t.TempDir()
	o := OverloadOptions{TenureBin: tenureBin(t), Clients: []int{4}, Keys: 2, Duration: time.Second, Runs: 1}
	runs, err := RunOverload(context.Background(), o, dir, &syncWriter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	op := runs[0].renew()
	if op.Count == 0 || op.Errors != 0 || runs[0].Elections != 0 || runs[0].StepDowns != 0 {
		t.Errorf("run: %s; want renewals, no failure, no election", runs[0].summary())
	}
	var table bytes.Buffer
	WriteOverload(&table, runs)
	if !strings.Contains(table.String(), "| 4 × 2 | 1 | ") {
		t.Errorf("table lacks the run:\n%s", table.String())
	}
	if left := processesUnder(t, dir); len(left) > 0 {
		t.Fatalf("processes left after the run:\n%s", strings.Join(left, "\n"))
	}
}
