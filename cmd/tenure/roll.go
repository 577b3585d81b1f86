package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/tenure-io/tenure/client"
)

// workersRoll restarts the live workers of a group a batch at a time, so
// that a rolling restart takes keys away from the workers gracefully and
// within the group's availability budget (max_moving: the balancer moves
// at most that many keys at once). For each batch it drains the batch's
// workers and waits until they hold no key, runs the command once per
// worker (TENURE_WORKER set to its id, and {id} in the arguments replaced
// by it), undrains them, and waits until each is alive again and every key
// of the group with a target is held by it, before the next batch. The
// command must return once the worker was restarted (or stopped, for a
// supervisor to start again). A command that fails, or a step that takes
// longer than -timeout, stops the roll with exit 1; the batch is undrained
// first.
func (e *env) workersRoll(ctx context.Context, args []string) int {
	var batch int
	var timeout time.Duration
	usage := "workers roll GROUP [-batch N] [-timeout D] -- COMMAND [ARGS...]"
	fs, cf := e.clusterFlagSet("workers roll", usage)
	fs.IntVar(&batch, "batch", 1, "workers restarted at once")
	fs.DurationVar(&timeout, "timeout", 5*time.Minute, "the longest a drain, or a batch's return to a settled group, may take")
	before, command, ok := splitCommand(args)
	if !ok {
		if _, code, ok := e.parse(fs, args, 0, -1); !ok {
			return code
		}
		return e.usageError(fs, "the command that restarts a worker must follow --")
	}
	c, pos, code, ok := e.connect(fs, cf, before, 1, 1)
	if !ok {
		return code
	}
	if batch < 1 || timeout <= 0 {
		return e.usageError(fs, fmt.Sprintf("-batch must be at least 1 and -timeout positive, got %d and %v", batch, timeout))
	}
	group := pos[0]
	g, _, err := c.Groups().Get(ctx, group, nil)
	if err != nil {
		return e.fail(err)
	}
	var ids []string
	for _, w := range g.Workers {
		if w.Status == "alive" && !w.Draining && !w.Drained {
			ids = append(ids, w.ID)
		}
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		return e.fail(fmt.Errorf("group %s has no live worker to restart", group))
	}
	for from := 0; from < len(ids); from += batch {
		ws := ids[from:min(from+batch, len(ids))]
		fmt.Fprintf(e.stdout, "batch %d of %d: %s\n", from/batch+1, (len(ids)+batch-1)/batch, strings.Join(ws, ", "))
		if err := e.rollBatch(ctx, c, group, ws, command, timeout); err != nil {
			return e.fail(err)
		}
	}
	fmt.Fprintf(e.stdout, "restarted %d workers of group %s\n", len(ids), group)
	return exitOK
}

// rollBatch drains ws, restarts each with command, undrains them, and
// waits until the group settled with them alive.
func (e *env) rollBatch(ctx context.Context, c *client.Client, group string, ws, command []string, timeout time.Duration) (err error) {
	undrain := func() error {
		for _, id := range ws {
			if _, err := c.Groups().Drain(ctx, id, false); err != nil {
				return fmt.Errorf("undrain %s: %w", id, err)
			}
		}
		return nil
	}
	defer func() {
		if err != nil { // give the keys back to the batch before giving up
			err = errors.Join(err, undrain())
		}
	}()
	for _, id := range ws {
		if _, err := c.Groups().Drain(ctx, id, true); err != nil {
			return fmt.Errorf("drain %s: %w", id, err)
		}
	}
	for _, id := range ws {
		wctx, cancel := context.WithTimeout(ctx, timeout)
		err := e.waitDrained(wctx, c, id)
		cancel()
		if err != nil {
			return fmt.Errorf("worker %s did not hand its keys back within %v: %w", id, timeout, err)
		}
	}
	for _, id := range ws {
		argv := make([]string, len(command))
		for i, a := range command {
			argv[i] = strings.ReplaceAll(a, "{id}", id)
		}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "TENURE_WORKER="+id)
		cmd.Stdout, cmd.Stderr = e.stdout, e.stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("restart of worker %s (%s): %w", id, shellWord(argv[0]), err)
		}
		fmt.Fprintf(e.stdout, "worker %s: restarted\n", id)
	}
	if err := undrain(); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return waitSettled(wctx, c, group, ws)
}

// waitSettled polls the group until each of ws is alive and every key
// with a target is held by it.
func waitSettled(ctx context.Context, c *client.Client, group string, ws []string) error {
	for {
		g, _, err := c.Groups().Get(ctx, group, nil)
		problem := ""
		switch {
		case err != nil:
			problem = err.Error()
		default:
			problem = unsettled(g, ws)
		}
		if problem == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("group %s has not settled: %s", group, problem)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// unsettled says why g has not settled with ws alive, or "".
func unsettled(g *client.Group, ws []string) string {
	for _, id := range ws {
		if !slices.ContainsFunc(g.Workers, func(w client.GroupWorker) bool { return w.ID == id && w.Status == "alive" }) {
			return fmt.Sprintf("worker %s is not alive", id)
		}
	}
	moving := 0
	for _, k := range g.Keys {
		if k.Target != "" && (k.State != "held" || k.Worker != k.Target) {
			moving++
		}
	}
	if moving > 0 {
		return fmt.Sprintf("keys not held by their target: %d", moving)
	}
	return ""
}
