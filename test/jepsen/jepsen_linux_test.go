package jepsen

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenure-io/tenure/test/jepsen/netns"
)

var (
	flagSeed     = flag.Uint64("seed", 0, "seed of the fault schedules, targets and operation mixes (0: from the clock; printed)")
	flagSuite    = flag.String("suite", "short", "short: three-node suite of make test; long: every fault in one long run (make jepsen)")
	flagNodes    = flag.Int("nodes", 3, "servers per run (3 or 5)")
	flagLimit    = flag.Duration("time-limit", 0, "length of each run's fault phase (default: 75s short, 10m long)")
	flagNemesis  = flag.String("nemesis", "", "comma-separated nemeses: run one scenario with just these (see nemesis_linux.go)")
	flagWorkload = flag.String("workload", "", "comma-separated workloads for the -nemesis scenario: register, mutex, elect, place")
	flagControls = flag.Bool("controls", true, "also run the negative controls")
	flagResults  = flag.String("results", "results", "directory for the results of every run")
	flagScenario = flag.String("scenario", "", "comma-separated names of the suite's runs to run (default: all), e.g. partitions,control-store-skips-fencing")
)

// TestJepsen runs the fault suite. It needs root (network namespaces,
// iptables); without it the test skips, unless CI=true, where it fails.
func TestJepsen(t *testing.T) {
	if testing.Short() {
		t.Skip("fault suite skipped in -short mode")
	}
	if err := netns.Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("fault suite cannot run under CI=true: %v", err)
		}
		t.Skipf("fault suite skipped: %v (run as root with ip and iptables installed; make test installs them)", err)
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "jepsen", Level: hclog.Info, Output: os.Stderr})
	if n, err := netns.Sweep(nsPrefix, log); err != nil {
		t.Fatalf("sweep namespaces of earlier runs: %v", err)
	} else if n > 0 {
		log.Warn("removed namespaces of earlier runs", "count", n)
	}

	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano() % 1_000_000_000)
	}
	limit := *flagLimit
	if limit == 0 {
		limit = 75 * time.Second
		if *flagSuite == "long" {
			limit = 10 * time.Minute
		}
	}
	runs, err := plan(seed, limit)
	if err != nil {
		t.Fatal(err)
	}
	stamp := time.Now().Format("20060102-150405")
	root, err := filepath.Abs(filepath.Join(*flagResults, fmt.Sprintf("%s-seed%d", stamp, seed)))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed=%d suite=%s nodes=%d time-limit=%v results=%s", seed, *flagSuite, *flagNodes, limit, root)
	t.Logf("replay: go test ./test/jepsen -run TestJepsen -count=1 -v -args -seed %d -suite %s -nodes %d -time-limit %v", seed, *flagSuite, *flagNodes, limit)

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	b, err := newBuilder(t.TempDir()) // binaries stay out of the results
	if err != nil {
		t.Fatal(err)
	}
	var table []*outcome
	for _, cfg := range runs {
		cfg.Dir = filepath.Join(root, cfg.Name)
		o, err := runOne(ctx, cfg, b, log.Named(cfg.Name))
		if err != nil {
			t.Fatalf("run %s (seed %d): %v\nresults: %s", cfg.Name, cfg.Seed, err, cfg.Dir)
		}
		for attempt := 2; cfg.Expect != "" && attempt <= cfg.Attempts && !o.caught(cfg.Expect); attempt++ {
			table = append(table, o)
			t.Logf("%s", o.row())
			t.Logf("negative control %s: %q found nothing on seed %d; attempt %d of %d on the next seed", cfg.Name, cfg.Expect, cfg.Seed, attempt, cfg.Attempts)
			cfg.Seed++
			cfg.Dir = filepath.Join(root, fmt.Sprintf("%s-attempt%d", cfg.Name, attempt))
			if o, err = runOne(ctx, cfg, b, log.Named(cfg.Name)); err != nil {
				t.Fatalf("run %s (seed %d): %v\nresults: %s", cfg.Name, cfg.Seed, err, cfg.Dir)
			}
		}
		table = append(table, o)
		v := o.violations()
		switch {
		case cfg.Expect == "" && len(v) > 0:
			t.Errorf("run %s: violations %s\nresults: %s\nreplay with -seed %d", cfg.Name, strings.Join(v, "; "), cfg.Dir, seed)
		case cfg.Expect != "" && o.undecided(cfg.Expect):
			t.Errorf("negative control %s: %q could not decide (it ran out of time); the control proves nothing this run\nresults: %s", cfg.Name, cfg.Expect, cfg.Dir)
		case cfg.Expect != "" && !o.caught(cfg.Expect):
			t.Errorf("negative control %s: %q reported no violation (got %v): the checker cannot catch this bug\nresults: %s", cfg.Name, cfg.Expect, v, cfg.Dir)
		}
		t.Logf("%s", o.row())
	}
	if err := writeTable(filepath.Join(root, "table.md"), table); err != nil {
		t.Fatal(err)
	}
	pruneResults(*flagResults, 10)
}

// plan turns the flags into runs.
func plan(seed uint64, limit time.Duration) ([]runConfig, error) {
	if *flagNodes != 3 && *flagNodes != 5 {
		return nil, fmt.Errorf("-nodes %d: want 3 or 5", *flagNodes)
	}
	if *flagSuite != "short" && *flagSuite != "long" {
		return nil, fmt.Errorf("-suite %q: want short or long", *flagSuite)
	}
	if *flagNemesis == "" && *flagWorkload == "" {
		runs := suite(*flagSuite, *flagNodes, limit, seed)
		if !*flagControls {
			runs = slices.DeleteFunc(runs, func(c runConfig) bool { return c.Expect != "" })
		}
		if *flagScenario != "" {
			want := strings.Split(*flagScenario, ",")
			runs = slices.DeleteFunc(runs, func(c runConfig) bool { return !slices.Contains(want, c.Name) })
			if len(runs) == 0 {
				return nil, fmt.Errorf("-scenario %q: no run of suite %s has that name", *flagScenario, *flagSuite)
			}
		}
		return runs, nil
	}
	var pool []string
	if *flagNemesis != "" && *flagNemesis != "none" {
		pool = strings.Split(*flagNemesis, ",")
	}
	for _, n := range pool {
		nm, ok := nemeses[n]
		if !ok {
			return nil, fmt.Errorf("-nemesis: unknown %q", n)
		}
		if nm.minServers > *flagNodes {
			return nil, fmt.Errorf("-nemesis %s needs %d servers (-nodes)", n, nm.minServers)
		}
	}
	wl := allWorkloads
	if *flagWorkload != "" {
		wl = strings.Split(*flagWorkload, ",")
		for _, w := range wl {
			if _, ok := agentCount[w]; !ok {
				return nil, fmt.Errorf("-workload: unknown %q (want register, mutex, elect, place)", w)
			}
		}
	}
	return []runConfig{{Name: "custom", Seed: seed, Servers: *flagNodes, Duration: limit, Nemeses: pool, Workloads: wl, MutexKeys: "mx-0,mx-1", Stall: 0.1, RevokeEvery: revokeEvery}}, nil
}
