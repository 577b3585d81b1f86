package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
)

const groupsUsage = `Usage: tenure groups <subcommand> [args]

Subcommands:
    list
    get NAME                        every key: target, holder, token; the workers
    create NAME [-keys K1,K2,... | -prefix P -count N] [-max-per-worker N]
                [-stuck-grace D] [-min-workers N] [-replace | -cas INDEX]
                                    an existing group is replaced only with
                                    -replace, or -cas its modify index
    delete NAME
    add-keys NAME KEY...
    remove-keys NAME KEY...
    set-keys NAME [KEY...] [-from FILE]
                                    the group's whole key set, in one change:
                                    the KEYs, or FILE's lines (one key each;
                                    a file without keys empties the group)
    max-per-worker NAME N
    balance NAME -by keys|load [-imbalance R] [-move-budget N]
                [-move-interval D] [-weight KEY=W ...] [-max-moving M]
                                    place keys by count (the default) or by
                                    load: see docs/placement.md
    assignment NAME [-worker ID]    the target plan
`

const keysUsage = `Usage: tenure keys <subcommand> [args]

Subcommands:
    show KEY                 the operator's controls of a key
    disable KEY [-force]     nobody may acquire it; its holder's renewals are
                             refused and the key frees at the holder's deadline
    enable KEY
    prohibit KEY HOLDER [-force]
                             HOLDER may not acquire it (nor renew it)
                             -force: free the holder's lease at once, and
                             accept a key the cluster does not know
    allow KEY HOLDER
`

func (e *env) groupsList(ctx context.Context, args []string) int {
	return e.query("groups list", "groups list", args, 0, 0, func(c *client.Client, _ []string) (any, func(), error) {
		groups, _, err := c.Groups().List(ctx, nil)
		return map[string]any{"groups": groups}, func() {
			e.printTable([]any{"NAME", "KEYS", "ASSIGNED", "MAX PER WORKER"}, len(groups), func(i int) []any {
				g := groups[i]
				return []any{g.Name, g.Keys, g.Assigned, g.MaxPerWorker}
			})
		}, err
	})
}

func (e *env) groupsGet(ctx context.Context, args []string) int {
	return e.query("groups get", "groups get NAME", args, 1, 1, func(c *client.Client, pos []string) (any, func(), error) {
		g, _, err := c.Groups().Get(ctx, pos[0], nil)
		if err != nil {
			return nil, nil, err
		}
		slices.SortFunc(g.Keys, func(a, b client.GroupKey) int { return compareCounting(a.Key, b.Key) })
		return g, func() { e.printGroup(g) }, nil
	})
}

// printGroup prints the tables of groupsGet.
func (e *env) printGroup(g *client.Group) {
	e.printTable([]any{"KEY", "TARGET", "WORKER", "TOKEN", "STATE", "LOAD", "CONTROLS"}, len(g.Keys), func(i int) []any {
		k := g.Keys[i]
		var ctl []string
		if k.Disabled {
			ctl = append(ctl, "disabled")
		}
		if len(k.Prohibited) > 0 {
			ctl = append(ctl, fmt.Sprintf("prohibited=%v", k.Prohibited))
		}
		target := dash(k.Target)
		if k.Preparing != "" {
			target += " (" + k.Preparing + " preparing)" // a warm hand-off
		}
		return []any{k.Key, target, dash(k.Worker), k.Token, k.State, loadText(k.Load), dash(strings.Join(ctl, " "))}
	})
	if g.HiddenKeys > 0 {
		fmt.Fprintf(e.stdout, "%d more keys hidden: the token may not read them\n", g.HiddenKeys)
	}
	fmt.Fprintln(e.stdout)
	sort.Slice(g.Workers, func(i, j int) bool { return g.Workers[i].ID < g.Workers[j].ID })
	e.printTable([]any{"WORKER", "STATUS", "TARGETS", "HOLDS", "CAPACITY", "KEY LOAD", "LOAD", "LOAD CAPACITY", "DRAINING", "STUCK"}, len(g.Workers), func(i int) []any {
		wk := g.Workers[i]
		lc := "-"
		if wk.LoadCapacity > 0 {
			lc = strconv.FormatFloat(wk.LoadCapacity, 'g', 6, 64)
		}
		return []any{wk.ID, wk.Status, wk.Targets, wk.Holds, wk.Capacity, loadText(wk.KeyLoad), loadText(wk.Load), lc, wk.Draining || wk.Drained, wk.Stuck}
	})
	if len(g.Stuck) > 0 {
		fmt.Fprintf(e.stdout, "\nStuck workers: %s\n", strings.Join(g.Stuck, ", "))
	}
	if g.Balance != nil {
		fmt.Fprintf(e.stdout, "\nPlacement: %s\n", balanceText(g.Balance))
	}
	if g.StuckGrace != "" || g.MinWorkers > 0 {
		fmt.Fprintf(e.stdout, "\nStuck grace: %s; min workers: %d\n", dash(g.StuckGrace), g.MinWorkers)
	}
}

// loadText is a load as the tables show it: six significant digits, or
// "-" when the leader knows none.
func loadText(load *float64) string {
	if load == nil {
		return "-"
	}
	return strconv.FormatFloat(*load, 'g', 6, 64)
}

func (e *env) groupsCreate(ctx context.Context, args []string) int {
	var spec client.GroupSpec
	var keys string
	var replace bool
	var cas uint64
	var grace time.Duration
	fs, cf := e.clusterFlagSet("groups create", "groups create NAME [-keys K1,K2,... | -prefix P -count N] [-max-per-worker N] [-stuck-grace D] [-min-workers N] [-replace | -cas INDEX]")
	fs.StringVar(&keys, "keys", "", "comma-separated keys of the group")
	fs.StringVar(&spec.Prefix, "prefix", "", "with -count: keys are PREFIX0 … PREFIX(count-1)")
	fs.IntVar(&spec.Count, "count", 0, "number of keys named from -prefix")
	fs.IntVar(&spec.MaxPerWorker, "max-per-worker", 0, "most keys one worker is given (0: an even spread)")
	fs.BoolVar(&replace, "replace", false, "replace the group if it exists, whatever it is")
	fs.Func("cas", "replace the group only if its modify index is this (0: create only)", func(s string) (err error) {
		if cas, err = strconv.ParseUint(s, 10, 64); err != nil {
			return fmt.Errorf("%q is not an unsigned integer", s)
		}
		return nil
	})
	fs.DurationVar(&grace, "stuck-grace", 0, "how long a key may stay free while targeted at a live worker before the worker is marked stuck (0: twice the largest TTL of the group's leases)")
	fs.IntVar(&spec.MinWorkers, "min-workers", 0, "workers the group should have; fewer is reported by 'tenure leases stale' (0: no minimum)")
	return e.answer(fs, cf, args, 1, 1, func(c *client.Client, pos []string) (any, func(), error) {
		if grace != 0 {
			spec.StuckGrace = grace.String()
		}
		casSet := given(fs, "cas")
		if replace && casSet {
			return nil, nil, badUsage("give either -replace or -cas, not both")
		}
		spec.Keys = splitList(keys)
		var g *client.GroupSummary
		var err error
		switch {
		case replace:
			g, err = c.Groups().Replace(ctx, pos[0], spec)
		case casSet:
			g, err = c.Groups().PutCAS(ctx, pos[0], spec, cas)
		default:
			g, err = c.Groups().Put(ctx, pos[0], spec)
		}
		var ae *client.APIError
		if errors.As(err, &ae) && ae.Code == wire.CodeCASFailed && ae.Group != nil && !casSet {
			err = fmt.Errorf("%w\n(group %s exists with modify index %d: add -replace to replace it, or -cas %d to replace it only if nobody changed it since)",
				err, pos[0], ae.Group.ModifyIndex, ae.Group.ModifyIndex)
		}
		return g, func() { e.printSummary(g) }, err
	})
}

// printSummary prints what a change of a group made of it.
func (e *env) printSummary(g *client.GroupSummary) {
	fmt.Fprintf(e.stdout, "Group %s: %d keys, %d assigned, max per worker %d\n", g.Name, g.Keys, g.Assigned, g.MaxPerWorker)
}

func (e *env) groupsDelete(ctx context.Context, args []string) int {
	return e.deleteOne("groups delete", "groups delete NAME", args, "Deleted group %s\n", func(c *client.Client, name string) error {
		return c.Groups().Delete(ctx, name)
	})
}

func (e *env) groupsKeys(ctx context.Context, args []string, add bool) int {
	name := map[bool]string{true: "add-keys", false: "remove-keys"}[add]
	fs, cf := e.clusterFlagSet("groups "+name, "groups "+name+" NAME KEY...")
	return e.answer(fs, cf, args, 2, -1, func(c *client.Client, pos []string) (any, func(), error) {
		added, removed := pos[1:], []string(nil)
		if !add {
			added, removed = nil, pos[1:]
		}
		g, err := c.Groups().AddRemoveKeys(ctx, pos[0], added, removed)
		return g, func() { e.printSummary(g) }, err
	})
}

func (e *env) groupsSetKeys(ctx context.Context, args []string) int {
	var from string
	fs, cf := e.clusterFlagSet("groups set-keys", "groups set-keys NAME [KEY...] [-from FILE]")
	fs.StringVar(&from, "from", "", "read the keys from FILE, one per line (blank lines skipped)")
	return e.answer(fs, cf, args, 1, -1, func(c *client.Client, pos []string) (any, func(), error) {
		keys := pos[1:]
		switch {
		case from != "" && len(keys) > 0:
			return nil, nil, badUsage("give the keys or -from FILE, not both")
		case from != "":
			data, err := os.ReadFile(from)
			if err != nil {
				return nil, nil, fmt.Errorf("-from: %w", err)
			}
			keys = []string{}
			for _, line := range strings.Split(string(data), "\n") {
				if line = strings.TrimSpace(line); line != "" {
					keys = append(keys, line)
				}
			}
		case len(keys) == 0:
			return nil, nil, badUsage("give the group's keys, or -from FILE (a file without keys empties the group)")
		}
		g, err := c.Groups().SetKeys(ctx, pos[0], keys)
		return g, func() { e.printSummary(g) }, err
	})
}

func (e *env) groupsMax(ctx context.Context, args []string) int {
	fs, cf := e.clusterFlagSet("groups max-per-worker", "groups max-per-worker NAME N")
	return e.answer(fs, cf, args, 2, 2, func(c *client.Client, pos []string) (any, func(), error) {
		n, err := strconv.Atoi(pos[1])
		if err != nil || n < 0 {
			return nil, nil, badUsage(fmt.Sprintf("N must be a number of keys, got %q", pos[1]))
		}
		g, err := c.Groups().SetMaxPerWorker(ctx, pos[0], n)
		return g, func() { e.printSummary(g) }, err
	})
}

func (e *env) groupsBalance(ctx context.Context, args []string) int {
	var b client.GroupBalance
	var budget int
	var interval time.Duration
	weights := loadsFlag{}
	fs, cf := e.clusterFlagSet("groups balance", "groups balance NAME -by keys|load [-imbalance R] [-move-budget N] [-move-interval D] [-weight KEY=W ...] [-max-moving M]")
	fs.StringVar(&b.By, "by", "", "required; keys: as even a number of keys per worker as their capacities allow; load: as even a share of the group's load")
	fs.Float64Var(&b.Imbalance, "imbalance", 0, fmt.Sprintf("by load: keys move while a worker's load is above R times its share, or below its share divided by R (0: %g)", wire.DefaultImbalance))
	fs.IntVar(&budget, "move-budget", -1, fmt.Sprintf("by load: most keys moved for balance per move interval (default %d; 0: none)", wire.DefaultMoveBudget))
	fs.DurationVar(&interval, "move-interval", 0, "by load: the interval of the move budget (0: "+wire.DefaultMoveInterval+")")
	fs.Var(weights, "weight", "KEY=W: the operator's load of KEY, in place of its reports (repeatable)")
	fs.IntVar(&b.MaxMoving, "max-moving", 0, "the availability budget: at most M keys of the group unowned or moving at once for planned moves (0: no bound)")
	return e.answer(fs, cf, args, 1, 1, func(c *client.Client, pos []string) (any, func(), error) {
		if b.By == "" {
			// A balance replaces the group's: saying it keeps a group by
			// load from going back to counting keys by omission.
			return nil, nil, badUsage("-by keys or -by load is required")
		}
		if budget >= 0 {
			b.MoveBudget = &budget
		}
		if interval > 0 {
			b.MoveInterval = interval.String()
		}
		if len(weights) > 0 {
			b.Weights = weights
		}
		got, err := c.Groups().SetBalance(ctx, pos[0], b)
		return got, func() { fmt.Fprintf(e.stdout, "Group %s: %s\n", pos[0], balanceText(got)) }, err
	})
}

// balanceText says how a group is placed, as groups balance and groups get
// print it.
func balanceText(b *client.GroupBalance) string {
	s := "balanced by key count"
	if b != nil && b.By == "load" {
		s = fmt.Sprintf("balanced by load, imbalance %g", b.Imbalance)
		if b.MoveBudget != nil {
			s += fmt.Sprintf(", at most %d moves per %s", *b.MoveBudget, b.MoveInterval)
		}
		if len(b.Weights) > 0 {
			s += fmt.Sprintf(", %d weights set", len(b.Weights))
		}
	}
	if b != nil && b.MaxMoving > 0 {
		s += fmt.Sprintf(", at most %d keys moving at once", b.MaxMoving)
	}
	return s
}

// loadsFlag collects repeated KEY=W flags.
type loadsFlag map[string]float64

func (m loadsFlag) String() string { return fmt.Sprint(map[string]float64(m)) }

func (m loadsFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	w, err := strconv.ParseFloat(v, 64)
	if !ok || k == "" || err != nil {
		return fmt.Errorf("want KEY=W with a number W, got %q", s)
	}
	m[k] = w
	return nil
}

func (e *env) groupsAssignment(ctx context.Context, args []string) int {
	var worker string
	fs, cf := e.clusterFlagSet("groups assignment", "groups assignment NAME [-worker ID]")
	fs.StringVar(&worker, "worker", "", "only the keys of this worker")
	return e.answer(fs, cf, args, 1, 1, func(c *client.Client, pos []string) (any, func(), error) {
		plan, _, err := c.Groups().Assignment(ctx, pos[0], worker, nil)
		return map[string]any{"group": pos[0], "assignment": plan}, func() {
			keys := slices.Sorted(maps.Keys(plan))
			e.printTable([]any{"KEY", "TARGET"}, len(keys), func(i int) []any { return []any{keys[i], plan[keys[i]]} })
		}, err
	})
}

// keyControl shows the controls of a key, or changes them as verb says
// with one atomic edit on the servers (no read-modify-write: operators
// editing the same key at once all get their change).
func (e *env) keyControl(ctx context.Context, args []string, verb string) int {
	n, usage := 1, "keys "+verb+" KEY"
	if verb == "prohibit" || verb == "allow" {
		n, usage = 2, usage+" HOLDER"
	}
	if verb == "disable" || verb == "prohibit" {
		usage += " [-force]"
	}
	fs, cf := e.clusterFlagSet("keys "+verb, usage)
	var force bool
	if verb == "disable" || verb == "prohibit" {
		fs.BoolVar(&force, "force", false, "free the holder's lease at once, for a holder known to be dead (exclusion then rests on fencing alone); also accept a key that the cluster does not know (no lease, group or control)")
	}
	return e.answer(fs, cf, args, n, n, func(c *client.Client, pos []string) (any, func(), error) {
		var edit client.KeyControlEdit
		on, off := true, false
		switch verb {
		case "disable":
			edit.Disabled = &on
		case "enable":
			edit.Disabled = &off
		case "prohibit":
			edit.Prohibit = []string{pos[1]}
		case "allow":
			edit.Allow = []string{pos[1]}
		}
		var ctl *client.KeyControl
		var err error
		if verb == "show" {
			ctl, err = c.Groups().Control(ctx, pos[0])
		} else {
			var opts []client.OperatorOption
			if force {
				opts = append(opts, client.WithForce())
			}
			ctl, err = c.Groups().EditControl(ctx, pos[0], edit, opts...)
		}
		if err != nil {
			return nil, nil, err
		}
		out := map[string]any{"key": pos[0], "disabled": ctl.Disabled, "prohibited": ctl.Prohibited}
		if len(ctl.Ended) > 0 {
			out["ended"] = ctl.Ended
		}
		return out, func() {
			fmt.Fprintf(e.stdout, "Key %s: disabled=%v prohibited=%v\n", pos[0], ctl.Disabled, ctl.Prohibited)
			e.printEnded("Ended", ctl.Ended)
		}, nil
	})
}
