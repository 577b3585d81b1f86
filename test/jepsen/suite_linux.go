package jepsen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenure-io/tenure/test/jepsen/check"
	"github.com/tenure-io/tenure/test/jepsen/history"
)

// outcome is what one run found.
type outcome struct {
	Config   runConfig
	Schedule []scheduleEntry
	Recovery map[string]time.Duration
	Results  []check.Result
	Ops      int
	Faults   int
	Installs int64
	Duration time.Duration
}

// violations lists the names of the checkers that failed, those that
// could not decide among them.
func (o *outcome) violations() []string {
	var out []string
	for _, r := range o.Results {
		if !r.Valid {
			out = append(out, r.Name)
		}
	}
	return out
}

// caught reports whether the result named name found a violation: it is
// not valid, and not for want of time (an undecided check is in
// violations, so that an ordinary run fails on it, but it catches no bug).
func (o *outcome) caught(name string) bool {
	for _, r := range o.Results {
		if r.Name == name && !r.Valid && !r.Unknown {
			return true
		}
	}
	return false
}

// undecided reports whether the result named name ran out of time.
func (o *outcome) undecided(name string) bool {
	for _, r := range o.Results {
		if r.Name == name && r.Unknown {
			return true
		}
	}
	return false
}

// runOne sets the world up, runs the workloads under the fault schedule,
// heals, measures recovery, stops everything and checks the histories.
// Everything it made is removed before it returns, also on error.
func runOne(ctx context.Context, cfg runConfig, b *builder, log hclog.Logger) (*outcome, error) {
	start := time.Now()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := writeJSON(cfg.Dir, "config.json", cfg); err != nil {
		return nil, err
	}
	w, err := setupWorld(ctx, cfg, b, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := w.close(); err != nil {
			log.Error("cleanup", "error", err)
		}
	}()
	o := &outcome{Config: cfg, Recovery: map[string]time.Duration{}}

	pollCtx, stopPoll := context.WithCancel(ctx)
	var polling sync.WaitGroup
	polling.Add(1)
	go func() { defer polling.Done(); w.pollStatus(pollCtx) }()
	defer func() { stopPoll(); polling.Wait() }()

	if !sleep(ctx, 5*time.Second) { // the workloads reach their stride
		return nil, ctx.Err()
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 1))
	o.Schedule, err = runSchedule(ctx, w, cfg.Nemeses, rng, cfg.Duration)
	if werr := writeSchedule(cfg.Dir, o.Schedule); err == nil {
		err = werr
	}
	if err != nil {
		return nil, err
	}
	o.Faults = len(o.Schedule)
	o.Installs = w.snapshotInstalls.Load()
	nemesisEffects := append(snapshotInstallResult(o), corruptResult(o, w.corruptRefusals.Load())...)
	nemesisEffects = append(nemesisEffects, diskFullResult(w)...)
	nemesisEffects = append(nemesisEffects, adversaryResult(w)...)
	if err := w.healAll(); err != nil {
		return nil, fmt.Errorf("heal: %w", err)
	}
	// Recovery counts from the undo of the last fault (the schedule ends
	// right after it), or from now when there was none.
	healedAt := history.Now()
	if n := len(o.Schedule); n > 0 && o.Schedule[n-1].End != 0 {
		healedAt = o.Schedule[n-1].End
	}
	rec := w.measureRecovery(ctx, healedAt, o)
	var placement *check.Result
	if w.has("place") {
		r := w.checkPlacement(ctx)
		placement = &r
	}
	w.waitCaughtUp(ctx, 2*recoveryBound)
	if err := w.stopAll(); err != nil {
		return nil, err
	}
	stopPoll()
	polling.Wait()
	results, ops, err := w.runChecks(placement)
	if err != nil {
		return nil, err
	}
	o.Results = append(append(results, rec...), nemesisEffects...)
	o.Ops = ops
	o.Duration = time.Since(start)
	if err := os.WriteFile(filepath.Join(cfg.Dir, "network.txt"), []byte(w.net.Describe()), 0o644); err != nil {
		return nil, err
	}
	if err := w.net.Close(); err != nil {
		return nil, err
	}
	if err := check.WriteSummary(filepath.Join(cfg.Dir, "results.txt"), o.Results); err != nil {
		return nil, err
	}
	return o, writeJSON(cfg.Dir, "outcome.json", o)
}

func writeSchedule(dir string, s []scheduleEntry) error {
	f, err := os.Create(filepath.Join(dir, "schedule.jsonl"))
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, e := range s {
		if err := enc.Encode(e); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// healAll undoes every fault whatever the schedule left: links, shaping,
// pauses, clock rates, and dead servers.
func (w *world) healAll() error {
	var errs []error
	errs = append(errs, w.net.Heal())
	for _, p := range w.all() {
		errs = append(errs, w.net.ClearShaping(p.name), p.resume())
	}
	for _, s := range w.servers {
		errs = append(errs, os.WriteFile(rateFile(w, s), []byte("1"), 0o644))
		if !s.running() {
			errs = append(errs, w.restart(s))
		}
	}
	return errors.Join(errs...)
}

// measureRecovery runs every probe at once and turns what they measured
// into Recovery results.
func (w *world) measureRecovery(ctx context.Context, healedAt int64, o *outcome) []check.Result {
	probes := w.probes(healedAt)
	firsts := make([]int64, len(probes))
	ctx, cancel := context.WithTimeout(ctx, 3*recoveryBound)
	defer cancel()
	var wg sync.WaitGroup
	for i, p := range probes {
		wg.Add(1)
		go func() { defer wg.Done(); firsts[i] = p.firstOK(ctx) }()
	}
	wg.Wait()
	var out []check.Result
	for i, p := range probes {
		r := check.Recovery("recovery: "+p.workload, healedAt, firsts[i], recoveryBound)
		if firsts[i] != 0 {
			o.Recovery[p.workload] = time.Duration(firsts[i] - healedAt)
		}
		out = append(out, r)
	}
	return out
}

// stopAll stops the workers (they release what they hold), the store, and
// then the servers, each with SIGTERM and a grace period.
func (w *world) stopAll() error {
	var wg sync.WaitGroup
	for _, a := range w.agents {
		wg.Add(1)
		go func() { defer wg.Done(); a.stop(10 * time.Second) }()
	}
	wg.Wait()
	var errs []error
	errs = append(errs, w.store.stop(5*time.Second))
	for _, s := range w.servers {
		errs = append(errs, s.stop(10*time.Second))
	}
	return errors.Join(errs...)
}

// snapshotInstallResult checks that every snapshot-install fault really
// ended in a follower installing the leader's snapshot: a nemesis that
// does not do what it says proves nothing.
func snapshotInstallResult(o *outcome) []check.Result {
	return effectResult(o, "snapshot-install", resSnapshots, o.Installs,
		"%d of %d snapshot-install faults ended in an installed snapshot")
}

// effectResult is the result name of a nemesis whose every fault must
// have its effect: valid when done (the faults that had it) is the number
// of the nemesis's faults in the schedule, none when there were none.
// format says done of how many, in that order.
func effectResult(o *outcome, nemesis, name string, done int64, format string) []check.Result {
	n := 0
	for _, e := range o.Schedule {
		if e.Nemesis == nemesis {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	r := check.Result{Name: name, Valid: done == int64(n), Ops: n}
	msg := fmt.Sprintf(format, done, n)
	if r.Valid {
		r.Notes = []string{msg}
	} else {
		r.Violations = []string{msg}
	}
	return []check.Result{r}
}

// waitCaughtUp waits until every server's log reaches the leader's commit
// index, so that the durability check reads whole logs: a follower that
// was cut off until the end needs a moment (or a snapshot) to catch up.
// After d it gives up and logs who lags; the durability check then says
// what that node misses.
func (w *world) waitCaughtUp(ctx context.Context, d time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		var lag []string
		if l := w.leader(ctx); l == nil {
			lag = append(lag, "no leader")
		} else if lst, err := w.status(ctx, l); err != nil {
			lag = append(lag, err.Error())
		} else {
			for _, s := range w.servers {
				if st, err := w.status(ctx, s); err != nil || st.LastLogIndex < lst.CommitIndex {
					lag = append(lag, fmt.Sprintf("%s at %d of %d", s.name, st.LastLogIndex, lst.CommitIndex))
				}
			}
		}
		if len(lag) == 0 {
			return
		}
		if !sleep(ctx, 200*time.Millisecond) {
			w.log.Warn("servers did not catch up before the stop", "lag", lag)
			return
		}
	}
}
