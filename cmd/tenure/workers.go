package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tenure-io/tenure/client"
)

const workersUsage = `Usage: tenure workers <subcommand> [args]

Subcommands:
    list [-json]                     every worker gossip knows: groups, capacity, drain state, keys
    drain ID... [-force] [-wait [-timeout D]]
                                     give the workers no keys: they hand them back (a rolling
                                     upgrade); -wait returns once they hold none
    undrain ID...
    roll GROUP [-batch N] [-timeout D] -- COMMAND [ARGS...]
                                     a rolling restart of the group's live workers, N at a
                                     time: drain, wait, run COMMAND (TENURE_WORKER and {id}
                                     name the worker), undrain, wait until settled
`

func (e *env) workersList(ctx context.Context, args []string) int {
	return e.query("workers list", "workers list", args, 0, 0, func(c *client.Client, _ []string) (any, func(), error) {
		workers, _, err := c.Groups().Workers(ctx, nil)
		return map[string]any{"workers": workers}, func() { e.printWorkers(workers) }, err
	})
}

// printWorkers prints the table of workersList.
func (e *env) printWorkers(workers []client.WorkerInfo) {
	e.printTable([]any{"WORKER", "STATUS", "GROUPS", "CAPACITY", "DRAIN", "TARGETS", "HOLDS"}, len(workers), func(i int) []any {
		wk := workers[i]
		targets := 0
		for _, k := range wk.Keys {
			targets += len(k.Targets)
		}
		var drain []string
		if wk.Drained {
			drain = append(drain, "drained")
		}
		if wk.Draining {
			drain = append(drain, "draining")
		}
		capacity := "-"
		if wk.Capacity > 0 {
			capacity = fmt.Sprint(wk.Capacity)
		}
		return []any{wk.ID, wk.Status, dash(strings.Join(wk.Groups, ",")), capacity, dash(strings.Join(drain, ",")), targets, dash(heldKeys(wk, 5))}
	})
}

// heldKeys renders the keys w holds, by group ("g: a, b; h: c"), at most
// limit keys per group (0: all), with how many more there are.
func heldKeys(w client.WorkerInfo, limit int) string {
	var parts []string
	for _, k := range w.Keys {
		if len(k.Holds) == 0 {
			continue
		}
		keys := k.Holds
		more := ""
		if limit > 0 && len(keys) > limit {
			keys, more = keys[:limit], fmt.Sprintf(" (+%d more)", len(keys)-limit)
		}
		parts = append(parts, k.Group+": "+strings.Join(keys, ", ")+more)
	}
	return strings.Join(parts, "; ")
}

func (e *env) workersDrain(ctx context.Context, args []string, draining bool) int {
	var force, wait bool
	var timeout time.Duration
	verb := map[bool]string{true: "drain", false: "undrain"}[draining]
	usage := "workers " + verb + " ID..."
	if draining {
		usage += " [-force] [-wait [-timeout D]]"
	}
	fs, cf := e.clusterFlagSet("workers "+verb, usage)
	if draining {
		fs.BoolVar(&force, "force", false, "also a worker that the cluster does not know (to drain it before it starts)")
		fs.BoolVar(&wait, "wait", false, "return once the worker holds no key of its groups, printing the keys left as they change")
		fs.DurationVar(&timeout, "timeout", 5*time.Minute, "with -wait: fail (exit 1) if the worker still holds keys after this long")
	}
	c, pos, code, ok := e.connect(fs, cf, args, 1, -1)
	if !ok {
		return code
	}
	if wait && timeout <= 0 {
		return e.usageError(fs, fmt.Sprintf("-timeout must be positive, got %v", timeout))
	}
	var opts []client.OperatorOption
	if force {
		opts = append(opts, client.WithForce())
	}
	var results []*client.DrainResult
	for _, id := range pos {
		res, err := c.Groups().Drain(ctx, id, draining, opts...)
		if err != nil {
			return e.fail(err)
		}
		for _, warning := range res.Warnings {
			fmt.Fprintf(e.stderr, "warning: %s\n", warning)
		}
		results = append(results, res)
	}
	if cf.json && !wait {
		if len(results) == 1 {
			return e.printJSON(results[0])
		}
		return e.printJSON(results)
	}
	for _, id := range pos {
		fmt.Fprintf(e.stdout, "Worker %s: draining=%v\n", id, draining)
	}
	if !wait {
		return exitOK
	}
	// The group's availability budget (max_moving) paces the keys of
	// every drained worker together.
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, id := range pos {
		if err := e.waitDrained(wctx, c, id); err != nil {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("worker %s still holds keys after %v", id, timeout)
			}
			return e.fail(err)
		}
	}
	return exitOK
}

// waitDrained follows worker with blocking reads until it holds no key of
// its groups, printing a line each time the keys it holds change.
func (e *env) waitDrained(ctx context.Context, c *client.Client, worker string) error {
	var index uint64
	last := ""
	for {
		w, meta, err := c.Groups().Worker(ctx, worker, &client.QueryOptions{WaitIndex: index, WaitTime: 5 * time.Second})
		switch {
		case errors.Is(err, client.ErrNotFound):
			w = &client.WorkerInfo{ID: worker} // nothing names it any more: it holds nothing
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		default:
			index = meta.Index
		}
		n := 0 // keys held in all its groups
		for _, k := range w.Keys {
			n += len(k.Holds)
		}
		if n == 0 {
			fmt.Fprintf(e.stdout, "worker %s: no keys left\n", worker)
			return nil
		}
		line := fmt.Sprintf("worker %s: %d keys left (group %s)", worker, n, strings.ReplaceAll(heldKeys(*w, 0), "; ", "; group "))
		if n == 1 {
			line = strings.Replace(line, "1 keys left", "1 key left", 1)
		}
		if line != last {
			fmt.Fprintln(e.stdout, line)
			last = line
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}
