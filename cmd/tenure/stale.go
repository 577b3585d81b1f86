package main

import (
	"context"
	"fmt"
	"time"
)

// leasesStale prints the leader's placement health report. For cron and
// monitoring: it exits 0 when nothing is wrong, 1 when something is, and 2
// when it could not ask (a bad command line, or no answer).
func (e *env) leasesStale(ctx context.Context, args []string) int {
	var cf clusterFlags
	var threshold time.Duration
	fs := e.newFlagSet("leases stale", "leases stale [-threshold D] [-json]")
	cf.register(fs)
	fs.DurationVar(&threshold, "threshold", 0, "report leases not renewed for longer than this (0: two thirds of each lease's TTL)")
	c, _, code, ok := e.connect(fs, &cf, args, 0, 0)
	if !ok {
		return code
	}
	if threshold < 0 {
		return e.usageError(fs, fmt.Sprintf("-threshold must not be negative, got %v", threshold))
	}
	h, err := c.PlacementHealth(ctx, threshold)
	if err != nil {
		fmt.Fprintf(e.stderr, "error: %v\n", err)
		return exitUsage
	}
	status := exitOK
	if !h.OK {
		status = exitError
	}
	if cf.json {
		if code := e.printJSON(h); code != exitOK {
			return code
		}
		return status
	}
	if h.OK && len(h.Unowned) == 0 {
		fmt.Fprintln(e.stdout, "ok: every key is owned, no worker is stuck, every group has its workers, every lease is renewed")
		return status
	}
	if len(h.Unowned) > 0 {
		w := e.table()
		row(w, "UNOWNED KEY", "GROUP", "TARGET", "UNOWNED FOR", "OVERDUE")
		for _, k := range h.Unowned {
			row(w, k.Key, k.Group, dash(k.Target), k.UnownedFor, k.Overdue)
		}
		w.Flush()
	}
	if len(h.Stuck) > 0 {
		fmt.Fprintln(e.stdout)
		w := e.table()
		row(w, "STUCK WORKER", "GROUP", "SINCE", "STUCK FOR", "QUARANTINE LEFT")
		for _, s := range h.Stuck {
			row(w, s.Worker, s.Group, s.Since, s.StuckFor, s.QuarantineLeft)
		}
		w.Flush()
	}
	if len(h.BelowMin) > 0 {
		fmt.Fprintln(e.stdout)
		w := e.table()
		row(w, "GROUP BELOW MIN", "WORKERS", "MIN WORKERS")
		for _, g := range h.BelowMin {
			row(w, g.Group, g.Workers, g.MinWorkers)
		}
		w.Flush()
	}
	if len(h.Stale) > 0 {
		fmt.Fprintln(e.stdout)
		w := e.table()
		row(w, "STALE LEASE", "HOLDER", "TOKEN", "TTL", "SINCE RENEWAL")
		for _, l := range h.Stale {
			row(w, l.Key, l.Holder, l.Token, l.TTL, l.SinceRenewal)
		}
		w.Flush()
	}
	if h.Truncated {
		fmt.Fprintln(e.stdout, "(lists cut at 1000 entries)")
	}
	fmt.Fprintln(e.stdout)
	if h.OK {
		fmt.Fprintln(e.stdout, "ok: keys are free for less than their group's grace")
	} else {
		fmt.Fprintln(e.stdout, "problems found")
	}
	return status
}
