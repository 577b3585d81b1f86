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
	// A blank line comes before every table but the first kind.
	if len(h.Unowned) > 0 {
		e.printTable([]any{"UNOWNED KEY", "GROUP", "TARGET", "UNOWNED FOR", "OVERDUE"}, len(h.Unowned), func(i int) []any {
			k := h.Unowned[i]
			return []any{k.Key, k.Group, dash(k.Target), k.UnownedFor, k.Overdue}
		})
	}
	if len(h.Stuck) > 0 {
		fmt.Fprintln(e.stdout)
		e.printTable([]any{"STUCK WORKER", "GROUP", "SINCE", "STUCK FOR", "QUARANTINE LEFT"}, len(h.Stuck), func(i int) []any {
			s := h.Stuck[i]
			return []any{s.Worker, s.Group, s.Since, s.StuckFor, s.QuarantineLeft}
		})
	}
	if len(h.BelowMin) > 0 {
		fmt.Fprintln(e.stdout)
		e.printTable([]any{"GROUP BELOW MIN", "WORKERS", "MIN WORKERS"}, len(h.BelowMin), func(i int) []any {
			g := h.BelowMin[i]
			return []any{g.Group, g.Workers, g.MinWorkers}
		})
	}
	if len(h.Stale) > 0 {
		fmt.Fprintln(e.stdout)
		e.printTable([]any{"STALE LEASE", "HOLDER", "TOKEN", "TTL", "SINCE RENEWAL"}, len(h.Stale), func(i int) []any {
			l := h.Stale[i]
			return []any{l.Key, l.Holder, l.Token, l.TTL, l.SinceRenewal}
		})
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
