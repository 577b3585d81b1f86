package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tenure-io/tenure/client"
)

// staleRows is how many entries of each kind leases stale lists without
// -all: a screenful.
const staleRows = 20

// serverListMax is the most entries the server sends of each kind
// (cluster.MaxHealthItems).
const serverListMax = 1000

// leasesStale prints the leader's placement health report: at most a
// screenful of each kind of problem (every entry with -all), the keys an
// operator disabled or on which holders are prohibited, and a summary by
// cause. For cron and monitoring: it exits 0 when nothing is wrong
// (controlled keys alone are not wrong), 1 when something is, and 2 when
// it could not ask (a bad command line, or no answer).
func (e *env) leasesStale(ctx context.Context, args []string) int {
	var threshold time.Duration
	var all bool
	fs, cf := e.clusterFlagSet("leases stale", "leases stale [-threshold D] [-all] [-json]")
	fs.DurationVar(&threshold, "threshold", 0, "report leases not renewed for longer than this (0: two thirds of each lease's TTL)")
	fs.BoolVar(&all, "all", false, fmt.Sprintf("list every entry the server sent (default: %d of each kind)", staleRows))
	c, _, code, ok := e.connect(fs, cf, args, 0, 0)
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
	if h.OK && len(h.Unowned) == 0 && len(h.Controlled) == 0 {
		fmt.Fprintln(e.stdout, "ok: every key is owned, no worker is stuck, every group has its workers, every lease is renewed")
		return status
	}
	slices.SortStableFunc(h.Unowned, func(a, b client.UnownedKey) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), compareCounting(a.Key, b.Key))
	})
	p := stalePrinter{e: e, all: all, truncated: h.Truncated}
	p.kind("unowned keys", []any{"UNOWNED KEY", "GROUP", "TARGET", "UNOWNED FOR", "OVERDUE"}, len(h.Unowned), func(i int) []any {
		k := h.Unowned[i]
		return []any{k.Key, k.Group, dash(k.Target), k.UnownedFor, k.Overdue}
	})
	p.kind("stuck workers", []any{"STUCK WORKER", "GROUP", "SINCE", "STUCK FOR", "QUARANTINE LEFT"}, len(h.Stuck), func(i int) []any {
		s := h.Stuck[i]
		return []any{s.Worker, s.Group, s.Since, s.StuckFor, s.QuarantineLeft}
	})
	p.kind("groups below their minimum", []any{"GROUP BELOW MIN", "WORKERS", "MIN WORKERS"}, len(h.BelowMin), func(i int) []any {
		g := h.BelowMin[i]
		return []any{g.Group, g.Workers, g.MinWorkers}
	})
	p.kind("stale leases", []any{"STALE LEASE", "HOLDER", "TOKEN", "TTL", "SINCE RENEWAL"}, len(h.Stale), func(i int) []any {
		l := h.Stale[i]
		return []any{l.Key, l.Holder, l.Token, l.TTL, l.SinceRenewal}
	})
	p.kind("controlled keys", []any{"CONTROLLED KEY", "GROUP", "DISABLED", "PROHIBITED"}, len(h.Controlled), func(i int) []any {
		k := h.Controlled[i]
		return []any{k.Key, k.Group, k.Disabled, dash(strings.Join(k.Prohibited, ","))}
	})
	if causes := staleCauses(h); len(causes) > 0 {
		fmt.Fprintln(e.stdout)
		fmt.Fprintln(e.stdout, "summary:")
		for _, c := range causes {
			fmt.Fprintln(e.stdout, "  "+c)
		}
	}
	fmt.Fprintln(e.stdout)
	switch {
	case !h.OK:
		fmt.Fprintln(e.stdout, "problems found")
	case len(h.Unowned) > 0:
		fmt.Fprintln(e.stdout, "ok: keys are free for less than their group's grace")
	default:
		fmt.Fprintln(e.stdout, "ok: nothing is wrong, but keys are controlled (listed above)")
	}
	return status
}

// stalePrinter prints the tables of leases stale, a blank line before
// every one but the first.
type stalePrinter struct {
	e              *env
	all, truncated bool
	printed        bool
}

// kind prints the table of n entries of one kind (noun names them): at
// most staleRows of them unless p.all, then how many it left out.
func (p *stalePrinter) kind(noun string, header []any, n int, cells func(i int) []any) {
	if n == 0 {
		return
	}
	if p.printed {
		fmt.Fprintln(p.e.stdout)
	}
	p.printed = true
	shown := n
	if !p.all {
		shown = min(n, staleRows)
	}
	p.e.printTable(header, shown, cells)
	cut := p.truncated && n >= serverListMax
	switch {
	case shown < n && cut:
		fmt.Fprintf(p.e.stdout, "… %s more %s (-all lists them; the server sends %s at most)\n", count(n-shown), noun, count(serverListMax))
	case shown < n:
		fmt.Fprintf(p.e.stdout, "… %s more %s (-all lists them)\n", count(n-shown), noun)
	case cut:
		fmt.Fprintf(p.e.stdout, "(the server sends %s %s at most)\n", count(serverListMax), noun)
	}
}

// staleCauses sums up a placement health report by cause: for each group
// why its keys are unowned, as far as the counts tell, the groups below
// their minimum, stuck workers and the keys an operator controls; then the
// stale leases.
func staleCauses(h *client.PlacementHealth) []string {
	var out []string
	for _, g := range h.Groups {
		enabled := g.Keys - g.DisabledKeys
		keys := "keys"
		if g.DisabledKeys > 0 {
			keys = "enabled keys"
		}
		if g.UnownedKeys > 0 {
			out = append(out, fmt.Sprintf("%s: %s of %s %s unowned: %s", g.Group, count(g.UnownedKeys), count(enabled), keys, unownedCause(g, enabled)))
		}
		if g.Workers < g.MinWorkers {
			out = append(out, fmt.Sprintf("%s: %s may take keys < min %d%s", g.Group, plural(g.Workers, "live worker", "live workers"), g.MinWorkers, heldBack(g)))
		}
		if g.StuckWorkers > 0 {
			out = append(out, fmt.Sprintf("%s: %s: they get no new keys until they hold theirs", g.Group, plural(g.StuckWorkers, "stuck worker", "stuck workers")))
		}
		if g.DisabledKeys == 1 {
			out = append(out, fmt.Sprintf("%s: 1 disabled key: nobody may acquire it (tenure keys enable KEY)", g.Group))
		} else if g.DisabledKeys > 1 {
			out = append(out, fmt.Sprintf("%s: %s disabled keys: nobody may acquire them (tenure keys enable KEY)", g.Group, count(g.DisabledKeys)))
		}
		if g.ProhibitedKeys > 0 {
			verb := "prohibits"
			if g.ProhibitedKeys > 1 {
				verb = "prohibit"
			}
			out = append(out, fmt.Sprintf("%s: %s %s holders (tenure keys allow KEY HOLDER)", g.Group, plural(g.ProhibitedKeys, "key", "keys"), verb))
		}
	}
	if n := len(h.Stale); n > 0 {
		within := cmp.Or(h.Threshold, "two thirds of its TTL")
		if n > 1 && h.Threshold == "" {
			within = "two thirds of their TTL"
		}
		atLeast := ""
		if h.Truncated && n >= serverListMax {
			atLeast = "at least "
		}
		out = append(out, fmt.Sprintf("%s%s not renewed within %s", atLeast, plural(n, "lease", "leases"), within))
	}
	return out
}

// unownedCause says why keys of g are unowned, from the first of: no live
// worker, none that may take keys, too little room, keys the plan targets
// at nobody; otherwise their targets have not taken them.
func unownedCause(g client.GroupHealth, enabled int) string {
	switch {
	case g.LiveWorkers == 0:
		return "no live worker serves the group"
	case g.Workers == 0:
		return fmt.Sprintf("none of %s may take keys%s", plural(g.LiveWorkers, "live worker", "live workers"), heldBack(g))
	case g.Room < enabled:
		each := count(g.RoomPerWorkerMax)
		if g.RoomPerWorkerMin != g.RoomPerWorkerMax {
			each = count(g.RoomPerWorkerMin) + " to " + count(g.RoomPerWorkerMax)
		}
		fix := "add workers or raise their capacity"
		if g.MaxPerWorker > 0 {
			fix += fmt.Sprintf(" and the group's max-per-worker (%s)", count(g.MaxPerWorker))
		}
		return fmt.Sprintf("%s × max %s = %s < %s keys%s: %s",
			plural(g.Workers, "live worker", "live workers"), each, count(g.Room), count(enabled), heldBack(g), fix)
	case g.UnplannedKeys > 0:
		return fmt.Sprintf("%s no target (the workers are prohibited on them, or the plan is not written yet)", plural(g.UnplannedKeys, "has", "have"))
	default:
		return "their target workers have not taken them"
	}
}

// heldBack says which live workers of g may not take keys, and why: "
// (held back: 1 draining, 1 stuck)", or "" when none is.
func heldBack(g client.GroupHealth) string {
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{g.DrainingWorkers, "draining"}, {g.StuckWorkers, "stuck"}, {g.NotAdmittedWorkers, "not admitted"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	if g.Workers == 0 {
		return " (" + strings.Join(parts, ", ") + ")"
	}
	return " (held back: " + strings.Join(parts, ", ") + ")"
}

// plural is "1 worker" or "3 workers", the count with thousands separated.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return count(n) + " " + many
}

// count formats n with commas between thousands: 1,024.
func count(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
