package jepsen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/test/jepsen/history"
	"github.com/tenure-io/tenure/test/jepsen/netns"
)

// A nemesis injects one fault and returns how to undo it. hold is how
// long the fault stays before it is undone.
type nemesis struct {
	name       string
	minServers int
	inject     func(ctx context.Context, w *world, rng *rand.Rand) (undo func() error, desc string, hold time.Duration, err error)
}

// driftRate is how far the clock-drift nemesis moves one server's lease
// clock: inside the client's margin (TTL/10), as the guarantees require.
const driftRate = 1.05

// linkFaultHold is how long a partition or a cut lasts: long enough for an
// election and for the 2s leases of cut-off holders to expire.
func linkFaultHold(rng *rand.Rand) time.Duration { return between(rng, 3*time.Second, 8*time.Second) }

func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

func names(ps []*proc) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.name)
	}
	return out
}

// pickLeader returns the leader and the other servers; a random server
// when no leader is known.
func (w *world) pickLeader(ctx context.Context, rng *rand.Rand) (*proc, []*proc) {
	l := w.leader(ctx)
	if l == nil {
		l = w.servers[rng.IntN(len(w.servers))]
	}
	var rest []*proc
	for _, s := range w.servers {
		if s != l {
			rest = append(rest, s)
		}
	}
	return l, rest
}

func partitionNemesis(name string, groups func(ctx context.Context, w *world, rng *rand.Rand) ([][]string, error)) nemesis {
	return nemesis{name: name, minServers: 3, inject: func(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
		g, err := groups(ctx, w, rng)
		if err != nil {
			return nil, "", 0, err
		}
		if err := w.net.Partition(g...); err != nil {
			return nil, "", 0, err
		}
		return w.net.Heal, fmt.Sprint(g), linkFaultHold(rng), nil
	}}
}

func blockNemesis(name string, minServers int, pairs func(ctx context.Context, w *world, rng *rand.Rand) [][2]string) nemesis {
	return nemesis{name: name, minServers: minServers, inject: func(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
		ps := pairs(ctx, w, rng)
		for _, p := range ps {
			if err := w.net.Block(p[0], p[1]); err != nil {
				w.net.Heal()
				return nil, "", 0, err
			}
		}
		return w.net.Heal, fmt.Sprintf("blocked %v", ps), linkFaultHold(rng), nil
	}}
}

// nemeses are every fault the suite knows, by name.
var nemeses = map[string]nemesis{}

func addNemesis(n nemesis) { nemeses[n.name] = n }

func init() {
	addNemesis(partitionNemesis("partition-halves", func(_ context.Context, w *world, rng *rand.Rand) ([][]string, error) {
		ss := append([]*proc{}, w.servers...)
		rng.Shuffle(len(ss), func(i, j int) { ss[i], ss[j] = ss[j], ss[i] })
		a, b := names(ss[:len(ss)/2]), names(ss[len(ss)/2:])
		for _, ag := range w.agents { // workers end up on either side
			if rng.IntN(2) == 0 {
				a = append(a, ag.name)
			} else {
				b = append(b, ag.name)
			}
		}
		return [][]string{a, b}, nil
	}))
	addNemesis(partitionNemesis("isolate-leader", func(ctx context.Context, w *world, rng *rand.Rand) ([][]string, error) {
		l, rest := w.pickLeader(ctx, rng)
		return [][]string{{l.name}, names(rest)}, nil
	}))
	addNemesis(partitionNemesis("isolate-follower", func(ctx context.Context, w *world, rng *rand.Rand) ([][]string, error) {
		l, rest := w.pickLeader(ctx, rng)
		f := rest[rng.IntN(len(rest))]
		others := []string{l.name}
		for _, s := range rest {
			if s != f {
				others = append(others, s.name)
			}
		}
		return [][]string{{f.name}, others}, nil
	}))
	addNemesis(partitionNemesis("workers-servers", func(_ context.Context, w *world, _ *rand.Rand) ([][]string, error) {
		return [][]string{names(w.servers), names(w.agents)}, nil
	}))
	// bridge: two halves that cannot talk, and one server that talks to both.
	addNemesis(blockNemesis("bridge", 3, func(_ context.Context, w *world, rng *rand.Rand) [][2]string {
		ss := append([]*proc{}, w.servers...)
		rng.Shuffle(len(ss), func(i, j int) { ss[i], ss[j] = ss[j], ss[i] })
		rest := ss[1:] // ss[0] is the bridge: it keeps every link
		half := len(rest) / 2
		var out [][2]string
		for _, a := range rest[:half] {
			for _, b := range rest[half:] {
				out = append(out, [2]string{a.name, b.name})
			}
		}
		return out
	}))
	// ring: every server sees a majority (itself and its two neighbours),
	// no two see the same one. Five servers.
	addNemesis(blockNemesis("majorities-ring", 5, func(_ context.Context, w *world, rng *rand.Rand) [][2]string {
		ss := append([]*proc{}, w.servers...)
		rng.Shuffle(len(ss), func(i, j int) { ss[i], ss[j] = ss[j], ss[i] })
		var out [][2]string
		n := len(ss)
		for i := range ss {
			for j := i + 1; j < n; j++ {
				if d := j - i; d != 1 && d != n-1 {
					out = append(out, [2]string{ss[i].name, ss[j].name})
				}
			}
		}
		return out
	}))
	addNemesis(nemesis{name: "one-way", minServers: 3, inject: func(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
		// The leader's packets to every other server are dropped; it still
		// hears them.
		l, rest := w.pickLeader(ctx, rng)
		for _, f := range rest {
			if err := w.net.Drop(l.name, f.name); err != nil {
				w.net.Heal()
				return nil, "", 0, err
			}
		}
		return w.net.Heal, fmt.Sprintf("%s -> %v dropped", l.name, names(rest)), linkFaultHold(rng), nil
	}})
	addNemesis(nemesis{name: "lagging-leader", minServers: 3, inject: laggingLeader})
	addNemesis(nemesis{name: "stray-transfer", minServers: 3, inject: strayTransfer})
	addNemesis(nemesis{name: "delay-loss", minServers: 1, inject: func(_ context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
		s := netns.Shaping{Delay: between(rng, 20*time.Millisecond, 80*time.Millisecond), Jitter: 10 * time.Millisecond, Loss: 0.05}
		for _, p := range w.servers {
			if err := w.net.Shape(p.name, s); err != nil {
				return nil, "", 0, err
			}
		}
		undo := func() error {
			for _, p := range w.servers {
				if err := w.net.ClearShaping(p.name); err != nil {
					return err
				}
			}
			return nil
		}
		return undo, fmt.Sprintf("servers: delay %v±%v (%s), loss %.0f%%", s.Delay, s.Jitter, w.net.DelaySupported(), s.Loss*100), between(rng, 4*time.Second, 8*time.Second), nil
	}})
	addNemesis(pauseNemesis("pause-leader", func(ctx context.Context, w *world, rng *rand.Rand) *proc { l, _ := w.pickLeader(ctx, rng); return l }))
	addNemesis(pauseNemesis("pause-follower", func(ctx context.Context, w *world, rng *rand.Rand) *proc {
		_, rest := w.pickLeader(ctx, rng)
		return rest[rng.IntN(len(rest))]
	}))
	addNemesis(nemesis{name: "pause-worker", minServers: 1, inject: func(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
		p := w.holdingWorker(ctx, rng)
		if p == nil {
			return func() error { return nil }, "no worker to pause", 0, nil
		}
		if err := p.pause(); err != nil {
			return nil, "", 0, err
		}
		hold := 2*holderTTL + between(rng, 500*time.Millisecond, 2*time.Second)
		return p.resume, "SIGSTOP " + p.name + " (holds a lease) for longer than its TTL", hold, nil
	}})
	addNemesis(killNemesis("kill-follower", func(ctx context.Context, w *world, rng *rand.Rand) []*proc {
		_, rest := w.pickLeader(ctx, rng)
		return []*proc{rest[rng.IntN(len(rest))]}
	}))
	addNemesis(killNemesis("kill-leader", func(ctx context.Context, w *world, rng *rand.Rand) []*proc {
		l, _ := w.pickLeader(ctx, rng)
		return []*proc{l}
	}))
	// stop-leader: SIGTERM to the leader, which hands leadership and its
	// leases' remaining times over before it exits (ADR 0018); restarted
	// after the hold.
	addNemesis(nemesis{name: "stop-leader", minServers: 3, inject: func(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
		l, _ := w.pickLeader(ctx, rng)
		if err := l.stop(10 * time.Second); err != nil {
			return nil, "", 0, err
		}
		return func() error { return w.restart(l) }, "SIGTERM " + l.name, between(rng, time.Second, 3*time.Second), nil
	}})
	addNemesis(killNemesis("kill-all", func(_ context.Context, w *world, _ *rand.Rand) []*proc { return w.servers }))
	addNemesis(nemesis{name: "transfer", minServers: 3, inject: func(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
		l, _ := w.pickLeader(ctx, rng)
		var out wire.TransferResult
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := w.call(cctx, "POST", w.url(l, "/v1/operator/transfer-leader"), map[string]any{}, &out)
		desc := fmt.Sprintf("from %s to %s", l.name, out.LeaderID)
		if err != nil {
			desc = fmt.Sprintf("from %s failed: %v", l.name, err) // a fault in itself, not a harness error
		}
		return func() error { return nil }, desc, between(rng, time.Second, 3*time.Second), nil
	}})
	addNemesis(nemesis{name: "snapshot-install", minServers: 3, inject: snapshotInstall})
	addNemesis(nemesis{name: "clock-drift", minServers: 1, inject: func(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
		var p *proc
		rate := driftRate
		if rng.IntN(2) == 0 {
			p, _ = w.pickLeader(ctx, rng) // a fast leader clock is the dangerous one
		} else {
			p = w.servers[rng.IntN(len(w.servers))]
			rate = 1 / driftRate
		}
		file := rateFile(w, p)
		if err := os.WriteFile(file, []byte(fmt.Sprint(rate)), 0o644); err != nil {
			return nil, "", 0, err
		}
		undo := func() error { return os.WriteFile(file, []byte("1"), 0o644) }
		return undo, fmt.Sprintf("%s lease clock rate %.3f", p.name, rate), between(rng, 5*time.Second, 10*time.Second), nil
	}})
}

// lagDelay is how late the other servers' packets reach a lagging
// leader. The followers, no longer hearing it, stand for election 0.5-1s
// after the cut (a 500ms heartbeat timeout, randomized up to twice that)
// and win within milliseconds; the old leader keeps hearing answers to
// what it sent before the cut for lagDelay, and hashicorp/raft's lease
// (500ms in the suite) keeps it Leader until 500ms after the last of
// them: an overlap of up to lagDelay+0.5s-0.5..1s. It cannot be longer:
// only three appends per follower are in flight (two in the pipeline, one
// heartbeat), so at much more than 1.2s the answers come more than 500ms
// apart and the lease lapses early.
const lagDelay = 1200 * time.Millisecond

// lagSteps is how many steps the delay of a lagging leader's links climbs
// in, lagStep apart. A delay that jumped from 0 to lagDelay would leave
// the leader hearing nothing for lagDelay, and the lease check would step
// it down at once; big steps make TCP time out spuriously and shrink its
// window, so that only a packet or two per round trip get through, with
// the same effect. In steps of 24ms, TCP follows the round trip as it
// grows.
const (
	lagSteps = 50
	lagStep  = 40 * time.Millisecond
)

// delayInto delays the links from rest into l by up to top, climbing in
// steps lagStep apart so that TCP follows the round trip as it grows. It
// returns the first error, or ctx's when ctx ends first.
func delayInto(ctx context.Context, w *world, l *proc, rest []*proc, top time.Duration, steps int) error {
	for i := 1; i <= steps; i++ {
		for _, f := range rest {
			if err := w.net.DelayLink(f.name, l.name, top*time.Duration(i)/time.Duration(steps)); err != nil {
				return err
			}
		}
		if !sleep(ctx, lagStep) {
			return ctx.Err()
		}
	}
	return nil
}

// laggingLeader congests the leader's links as a failing network path
// would: the other servers' packets to it arrive later and later, up to
// lagDelay, then its packets to them are dropped. Workers reach it as
// before. For a while two servers' Rafts say Leader: the old one, still
// hearing answers of its own term, and the one the others elected. The
// old leader's leadership rounds must fail all the same.
//
// Transferring leadership instead of cutting (the election would then be
// at a known time) does not work: with answers lagDelay late the pipeline
// is full, and the transfer times out (after the election timeout) before
// it sends TimeoutNow.
func laggingLeader(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
	l, rest := w.pickLeader(ctx, rng)
	undo := func() error {
		errs := []error{w.net.Heal()}
		for _, f := range rest {
			errs = append(errs, w.net.DelayLink(f.name, l.name, 0))
		}
		return errors.Join(errs...)
	}
	if err := delayInto(ctx, w, l, rest, lagDelay, lagSteps); err != nil {
		return nil, "", 0, errors.Join(err, undo())
	}
	for _, f := range rest {
		if err := w.net.Drop(l.name, f.name); err != nil {
			return nil, "", 0, errors.Join(err, undo())
		}
	}
	desc := fmt.Sprintf("%v -> %s delayed up to %v over %v, then %s -> %v dropped", names(rest), l.name, lagDelay, lagSteps*lagStep, l.name, names(rest))
	return undo, desc, between(rng, 1500*time.Millisecond, 2500*time.Millisecond), nil
}

func rateFile(w *world, p *proc) string { return filepath.Join(w.cfg.Dir, "data", p.name+".rate") }

func pauseNemesis(name string, pick func(context.Context, *world, *rand.Rand) *proc) nemesis {
	return nemesis{name: name, minServers: 1, inject: func(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
		p := pick(ctx, w, rng)
		if err := p.pause(); err != nil {
			return nil, "", 0, err
		}
		return p.resume, "SIGSTOP " + p.name, between(rng, 2*time.Second, 6*time.Second), nil
	}}
}

func killNemesis(name string, pick func(context.Context, *world, *rand.Rand) []*proc) nemesis {
	return nemesis{name: name, minServers: 1, inject: func(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
		ps := pick(ctx, w, rng)
		for _, p := range ps {
			if err := p.kill(); err != nil {
				return nil, "", 0, err
			}
		}
		undo := func() error {
			for _, p := range ps {
				if err := w.restart(p); err != nil {
					return err
				}
			}
			return nil
		}
		return undo, "SIGKILL " + strings.Join(names(ps), ","), between(rng, time.Second, 5*time.Second), nil
	}}
}

// holdingWorker returns a mutex or election worker that holds a lease now,
// by the cluster's stale view; any such worker when none is known to.
func (w *world) holdingWorker(ctx context.Context, rng *rand.Rand) *proc {
	var cands []*proc
	for _, a := range w.agents {
		if a.role == "mutex" || a.role == "elect" {
			cands = append(cands, a)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	var list wire.LeaseList
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := w.call(cctx, "GET", w.url(w.servers[rng.IntN(len(w.servers))], "/v1/leases?state=held&stale=true"), nil, &list); err == nil {
		held := map[string]bool{}
		for _, l := range list.Leases {
			held[strings.SplitN(l.Holder, "#", 2)[0]] = true
		}
		var holding []*proc
		for _, c := range cands {
			if held[c.name] {
				holding = append(holding, c)
			}
		}
		if len(holding) > 0 {
			cands = holding
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].name < cands[j].name })
	return cands[rng.IntN(len(cands))]
}

// scheduleEntry is one line of schedule.jsonl.
type scheduleEntry struct {
	Start   int64  `json:"start"` // CLOCK_MONOTONIC ns
	End     int64  `json:"end,omitempty"`
	Nemesis string `json:"nemesis"`
	Desc    string `json:"desc"`
	Error   string `json:"error,omitempty"`
}

// runSchedule injects the faults of pool, each once in an order drawn
// from rng and then again, until ctx ends or d passes; each fault is
// followed by a quiet spell, except the last, which is undone just before
// runSchedule returns, so recovery is measured from a fresh fault. It
// returns what it did.
func runSchedule(ctx context.Context, w *world, pool []string, rng *rand.Rand, d time.Duration) ([]scheduleEntry, error) {
	var out []scheduleEntry
	end := time.Now().Add(d)
	if len(pool) == 0 { // no faults: the workloads run for d all the same
		if !sleep(ctx, d) {
			return nil, ctx.Err()
		}
		return nil, nil
	}
	var order []string // every nemesis of the pool once, in a seeded order, then again
	for time.Now().Before(end) && len(pool) > 0 {
		if len(order) == 0 {
			order = append(order, pool...)
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		n := nemeses[order[0]]
		order = order[1:]
		e := scheduleEntry{Start: history.Now(), Nemesis: n.name}
		w.log.Info("nemesis start", "nemesis", n.name)
		undo, desc, hold, err := n.inject(ctx, w, rng)
		e.Desc = desc
		if err != nil {
			e.Error = err.Error()
			out = append(out, e)
			return out, fmt.Errorf("nemesis %s: %w", n.name, err)
		}
		if !sleep(ctx, hold) {
			undo()
			return out, ctx.Err()
		}
		if err := undo(); err != nil {
			e.Error = err.Error()
			out = append(out, e)
			return out, fmt.Errorf("undo %s: %w", n.name, err)
		}
		e.End = history.Now()
		w.log.Info("nemesis end", "nemesis", n.name, "desc", desc)
		out = append(out, e)
		if !time.Now().Before(end) {
			break // recovery is measured from this undo
		}
		if !sleep(ctx, between(rng, 2*time.Second, 4*time.Second)) {
			return out, ctx.Err()
		}
	}
	return out, nil
}

func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
