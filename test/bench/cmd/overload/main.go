// Command overload measures a three-server tenure cluster under more
// renewals than two cores can answer: `tenure bench -op renew` with
// -clients clients of -keys leases each, closed loop, for -duration, -runs
// times per client count, each run against a fresh cluster. It prints, and
// with -results writes to a Markdown file, each run's renewals, failures
// by kind, latency percentiles, elections (the rise of the Raft term) and
// the leader's step-downs for want of a quorum.
//
//	make bench-overload   # 1000 and 2000 clients × 10 leases, 60 s, 5 runs each
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tenure-io/tenure/test/bench"
)

func main() { os.Exit(run()) }

func run() int {
	var o bench.OverloadOptions
	var clients, tenureArgs, results string
	flag.StringVar(&o.TenureBin, "tenure", "", "the tenure binary (required)")
	flag.StringVar(&clients, "clients", "1000,2000", "client counts, comma-separated")
	flag.IntVar(&o.Keys, "keys", 10, "leases of each client")
	flag.DurationVar(&o.Duration, "duration", time.Minute, "length of each run")
	flag.IntVar(&o.Runs, "runs", 5, "runs per client count")
	flag.StringVar(&tenureArgs, "tenure-args", "", "extra `tenure server` flags, space-separated")
	flag.StringVar(&results, "results", "", "also write the table, with the command, to this Markdown file")
	flag.Parse()
	for _, f := range strings.Split(clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return usage(fmt.Errorf("-clients: %q is not a positive count", f))
		}
		o.Clients = append(o.Clients, n)
	}
	switch {
	case o.TenureBin == "":
		return usage(fmt.Errorf("-tenure: the tenure binary is required"))
	case o.Keys < 1:
		return usage(fmt.Errorf("-keys must be at least 1, got %d", o.Keys))
	case o.Runs < 1:
		return usage(fmt.Errorf("-runs must be at least 1, got %d", o.Runs))
	case o.Duration <= 0:
		return usage(fmt.Errorf("-duration must be positive, got %v", o.Duration))
	}
	o.TenureArgs = strings.Fields(tenureArgs)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "tenure-overload-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	started := time.Now()
	runs, runErr := bench.RunOverload(ctx, o, dir, os.Stderr)
	bench.WriteOverload(os.Stdout, runs)
	if results != "" {
		f, err := os.Create(results)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(f, "# tenure under overload, %s\n\n", started.UTC().Format("2006-01-02 15:04 MST"))
		fmt.Fprintf(f, "- command: `overload %s`\n", strings.Join(os.Args[1:], " "))
		fmt.Fprintf(f, "- machine: %s\n", bench.Machine())
		fmt.Fprintf(f, "- each run: a fresh three-server cluster on loopback (its default flags%s) and `tenure bench -op renew` on the same machine\n\n",
			map[bool]string{true: "", false: " and " + tenureArgs}[tenureArgs == ""])
		bench.WriteOverload(f, runs)
		if runErr != nil {
			fmt.Fprintf(f, "\n**The runs stopped early**: %v\n", runErr)
		}
		if err := f.Close(); err != nil {
			return fail(err)
		}
	}
	if runErr != nil {
		return fail(runErr)
	}
	return 0
}

func usage(err error) int { return bench.Usage("overload", err) }

func fail(err error) int { return bench.Fail("overload", err) }
