// Command sidebyside is the long run of the side-by-side lock test
// (package sidebyside): every arm, against the current etcd and Debian's,
// for -duration each, then a results file with the command, the seed and
// the counts of each arm. It needs root (network namespaces) and
// PostgreSQL; `make bench-locks` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/test/bench/sidebyside"
)

func main() {
	tenure := flag.String("tenure", "", "the tenure binary (default: built from the repository)")
	etcdCurrent := flag.String("etcd", "", "the current etcd (default: built from this module, as make bench-etcd)")
	etcdDebian := flag.String("etcd-debian", "/usr/bin/etcd", "Debian's etcd-server, for its arms (\"\" leaves them out)")
	seed := flag.Uint64("seed", 0, "the nemesis's seed (0: from the clock)")
	duration := flag.Duration("duration", 2*time.Minute, "the agents' run in each arm")
	agents := flag.Int("agents", 4, "agents contending for the lock")
	pauseProb := flag.Float64("pause-prob", 0.15, "chance of pausing an agent that is about to write")
	results := flag.String("results", "", "the results file (default: results/<date>-locks.md of this module)")
	keep := flag.String("dir", "", "keep the servers' and agents' logs here (default: a temporary folder, removed)")
	flag.Parse()
	if err := run(*tenure, *etcdCurrent, *etcdDebian, *seed, *duration, *agents, *pauseProb, *results, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "sidebyside:", err)
		os.Exit(1)
	}
}

func run(tenure, etcdCurrent, etcdDebian string, seed uint64, duration time.Duration, agents int, pauseProb float64, results, keep string) error {
	if seed == 0 {
		seed = uint64(time.Now().UnixNano() % 1_000_000_000)
	}
	tmp, err := os.MkdirTemp("", "tenure-sidebyside-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dir := keep
	if dir == "" {
		dir = filepath.Join(tmp, "runs")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return err
	}
	bins, err := sidebyside.Build(root, tmp, sidebyside.Binaries{Tenure: tenure, EtcdCurrent: etcdCurrent, EtcdDebian: etcdDebian})
	if err != nil {
		return err
	}
	arms, err := sidebyside.Arms(bins, true)
	if err != nil {
		return err
	}
	cfg := sidebyside.Config{
		Arms: arms, Agent: bins.Agent, Seed: seed, Duration: duration, Agents: agents,
		TTL: 2 * time.Second, PauseProb: pauseProb, Pause: 3500 * time.Millisecond, CutEvery: 5 * time.Second,
		Dir: dir, Log: hclog.New(&hclog.LoggerOptions{Name: "sidebyside", Level: hclog.Info, Output: os.Stderr}),
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	start := time.Now().UTC()
	rs, err := sidebyside.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if results == "" {
		results = filepath.Join("results", start.Format("2006-01-02")+"-locks.md")
	}
	text := report(cfg, rs, start, strings.Join(os.Args[1:], " "))
	if err := os.WriteFile(results, []byte(text), 0o644); err != nil {
		return err
	}
	fmt.Print(text)
	fmt.Fprintln(os.Stderr, "wrote", results)
	return nil
}

// report is the results file.
func report(cfg sidebyside.Config, rs []sidebyside.Result, start time.Time, args string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Locks side by side under pauses and cuts, %s\n\n", start.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "- command: `cd test/bench && go run ./cmd/sidebyside %s` (`make bench-locks`)\n", args)
	fmt.Fprintf(&b, "- seed: %d (the nemesis's choices, the same in every arm: whether each agent's n-th write is paused, "+
		"and the times and victims of the cuts; what an agent is doing when a cut comes depends on timing)\n", cfg.Seed)
	fmt.Fprintf(&b, "- each arm: three servers, a PostgreSQL server and %d agents, each in its own network namespace; "+
		"the agents run %v, with a lock TTL of %v\n", cfg.Agents, cfg.Duration, cfg.TTL)
	fmt.Fprintf(&b, "- workload: take the lock, read the counter, check the lock is still held, write the counter plus one and a "+
		"history row in one transaction, let the lock go\n")
	fmt.Fprintf(&b, "- fenced arms use sqlfence with the lock's token: (read and write) records it before the read and checks it "+
		"again in the write's transaction; (write only) checks it in the write's transaction alone\n")
	fmt.Fprintf(&b, "- nemesis: an agent that is about to write (after its check; it waits for the nemesis's word) is paused (SIGSTOP) for %v with chance %.2f; "+
		"about every %v an agent is cut off from every lock server for %v\n", cfg.Pause, cfg.PauseProb, cfg.CutEvery, cfg.Pause)
	fmt.Fprintf(&b, "- counted from the store's history: writes committed, the counter at the end, increments lost "+
		"(committed minus the counter), writes that wrote a value already written (doubled), and writes committed after one "+
		"with a higher token (by a superseded holder); refused is what the fence refused\n\n")
	fmt.Fprintf(&b, "| arm | lock, store | committed | counter | lost | doubled | superseded | refused | pauses | cuts |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		a := r.Anomalies
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %d | %d | %d |\n",
			r.Arm.Name, r.Arm.Label, a.Committed, a.Final, a.Lost, a.Doubled, a.Superseded, r.Refused, r.Pauses, r.Cuts)
	}
	return b.String()
}
