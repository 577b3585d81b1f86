package jepsen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/test/jepsen/check"
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

// diskNemeses fill one server's disk: a follower's, then (in its own
// fault) the leader's. A run that uses them puts every server's data dir
// on a small tmpfs of its own, so that filling it touches nothing else.
var diskNemeses = []string{"disk-full-follower", "disk-full-leader"}

// diskSize is the size of each server's tmpfs: room for the short runs'
// logs and snapshots, small enough to fill at once.
const diskSize = "32m"

// resDiskFull names the effect check of the disk nemeses.
const resDiskFull = "nemesis: a full server reports not ready or steps down"

// disks are the tmpfs mounts of a run and what the disk nemeses saw.
type disks struct {
	mu      sync.Mutex
	mounted []string
	effects []diskEffect
}

// diskEffect is what one disk fault did: whether the filled server showed
// the effect it must (not ready; stepped down), and how.
type diskEffect struct {
	nemesis, server, how string
	seen                 bool
}

func (w *world) usesDisks() bool {
	return slices.ContainsFunc(w.cfg.Nemeses, func(n string) bool { return slices.Contains(diskNemeses, n) })
}

// mountDisks puts each server's data dir on a tmpfs of its own when the
// run fills disks. close unmounts them (unmountDisks).
func (w *world) mountDisks() error {
	if !w.usesDisks() {
		return nil
	}
	for _, s := range w.servers {
		if err := syscall.Mount("tenure-jepsen", s.dataDir, "tmpfs", 0, "size="+diskSize+",mode=0755"); err != nil {
			return fmt.Errorf("mount a tmpfs on %s: %w", s.dataDir, err)
		}
		w.disks.mu.Lock()
		w.disks.mounted = append(w.disks.mounted, s.dataDir)
		w.disks.mu.Unlock()
	}
	return nil
}

// unmountDisks unmounts every tmpfs of the run (lazily: a server killed a
// moment ago may still hold a file); safe to call twice.
func (w *world) unmountDisks() error {
	w.disks.mu.Lock()
	defer w.disks.mu.Unlock()
	var errs []error
	for _, dir := range w.disks.mounted {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unmount %s: %w", dir, err))
		}
	}
	w.disks.mounted = nil
	return errors.Join(errs...)
}

// fillDisk takes every free byte of dir's file system with a file and
// returns how to free them.
func fillDisk(dir string) (free func() error, err error) {
	path := filepath.Join(dir, "jepsen-filler")
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			f.Close()
			if !errors.Is(err, syscall.ENOSPC) {
				os.Remove(path)
				return nil, fmt.Errorf("fill %s: %w", dir, err)
			}
			return func() error { return os.Remove(path) }, nil
		}
	}
}

func init() {
	addNemesis(diskFullNemesis("disk-full-follower", false))
	addNemesis(diskFullNemesis("disk-full-leader", true))
}

// diskFullNemesis fills the disk of the leader or of a follower and
// watches it while full: a follower must answer /readyz 503 naming the
// full disk; a leader must stop leading (step down when an append fails,
// or exit when it cannot store a new term) or, while its appends still
// find room in raft.db's free pages, answer /readyz 503 naming a failed
// snapshot and the full disk. The undo frees the space and restarts the
// server if it exited.
func diskFullNemesis(name string, leader bool) nemesis {
	return nemesis{name: name, minServers: 3, inject: func(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
		if !w.usesDisks() {
			return nil, "", 0, fmt.Errorf("%s: the run's data dirs are not on their own tmpfs", name)
		}
		l, rest := w.pickLeader(ctx, rng)
		p, role := l, "leader"
		if !leader {
			p, role = rest[rng.IntN(len(rest))], "follower"
		}
		free, err := fillDisk(p.dataDir)
		if err != nil {
			return nil, "", 0, err
		}
		wctx, stop := context.WithCancel(ctx)
		done := make(chan diskEffect, 1)
		go func() { done <- w.watchFull(wctx, name, p, leader) }()
		undo := func() error {
			stop()
			eff := <-done
			w.disks.mu.Lock()
			w.disks.effects = append(w.disks.effects, eff)
			w.disks.mu.Unlock()
			errs := []error{free()}
			if !p.running() {
				errs = append(errs, w.restart(p))
			}
			return errors.Join(errs...)
		}
		return undo, fmt.Sprintf("filled the disk of %s (%s)", p.name, role), between(rng, 6*time.Second, 10*time.Second), nil
	}}
}

// watchFull polls the full server p until ctx ends and reports whether it
// showed the effect it must.
func (w *world) watchFull(ctx context.Context, nemesis string, p *proc, leader bool) diskEffect {
	eff := diskEffect{nemesis: nemesis, server: p.name}
	for {
		switch {
		case !p.running():
			eff.seen, eff.how = true, "exited"
		case leader:
			if st, err := w.status(ctx, p); err == nil && st.Role != "leader" {
				eff.seen, eff.how = true, fmt.Sprintf("stepped down (%s, term %d)", st.Role, st.Term)
			} else if why, ok := w.notReadyForDisk(ctx, p); ok && why == whySnapshot {
				// A failed append must step it down: only a failed
				// snapshot may leave it leading.
				eff.seen, eff.how = true, "leading, not ready: "+why
			}
		default:
			if why, ok := w.notReadyForDisk(ctx, p); ok {
				eff.seen, eff.how = true, "not ready: "+why
			}
		}
		if eff.seen || !sleep(ctx, 200*time.Millisecond) {
			return eff
		}
	}
}

// notReadyForDisk reports whether p answers /readyz 503 naming a full
// disk, and which write failed: the Raft log or stable store, or a
// snapshot.
func (w *world) notReadyForDisk(ctx context.Context, p *proc) (string, bool) {
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	code, err := w.call(cctx, "GET", w.url(p, "/readyz"), nil, nil)
	if code != 503 || err == nil || !strings.Contains(err.Error(), "no space left on device") {
		return "", false
	}
	if strings.Contains(err.Error(), "snapshot write failed") {
		return whySnapshot, true
	}
	return "log write failed, no space left on device", true
}

// whySnapshot is notReadyForDisk's reason for a failed snapshot.
const whySnapshot = "snapshot write failed, no space left on device"

// diskFullResult checks that every disk fault had its effect.
func diskFullResult(w *world) []check.Result {
	w.disks.mu.Lock()
	defer w.disks.mu.Unlock()
	if len(w.disks.effects) == 0 {
		return nil
	}
	r := check.Result{Name: resDiskFull, Valid: true, Ops: len(w.disks.effects)}
	for _, e := range w.disks.effects {
		if e.seen {
			r.Notes = append(r.Notes, fmt.Sprintf("%s on %s: %s", e.nemesis, e.server, e.how))
			continue
		}
		r.Valid = false
		want := "report not ready naming the full disk"
		if e.nemesis == "disk-full-leader" {
			want = "stop leading or report not ready naming the full disk"
		}
		r.Violations = append(r.Violations, fmt.Sprintf("%s on %s: did not %s while full", e.nemesis, e.server, want))
	}
	return []check.Result{r}
}

// diskRunTime is the fault phase of the short suite's disk-full run: each
// disk nemesis about once.
const diskRunTime = 25 * time.Second

// strayDelay is how late the other servers' packets reach the leader
// while the stray-transfer nemesis acts. It stays below the leader lease
// of the suite (500ms) with room for the heartbeat interval (50-100ms):
// the leader hears a quorum often enough never to step down by itself,
// and it hears of the newer term strayDelay after the others moved to it.
const strayDelay = 300 * time.Millisecond

// strayTransfer is a leadership transfer that its leader gave up on but
// that happened all the same. hashicorp/raft's leader waits one election
// timeout for a transfer; when it gives up it leads on as before, while
// the TimeoutNow it sent may still arrive: its target then stands for
// election at once, and the other voters vote for it, a transfer being
// the one case in which a voter with a live leader grants its vote. The
// nemesis makes that state directly: it delays every link into the
// leader by strayDelay (climbing in steps so that TCP follows), then
// sends a follower the TimeoutNow the leader would have sent, from the
// leader's namespace to the follower's Raft port, with the leader's own
// certificate. For about strayDelay the
// old leader's Raft says Leader in its old term while the new leader
// commits: a leadership check that trusts anything but a fresh quorum in
// the current round serves stale reads and renewals in that window.
//
// Unlike lagging-leader, the overlap does not hang on how the followers'
// election timers fall: it begins when the target receives the message.
func strayTransfer(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
	l, rest := w.pickLeader(ctx, rng)
	undo := func() error {
		var errs []error
		for _, f := range rest {
			errs = append(errs, w.net.DelayLink(f.name, l.name, 0))
		}
		return errors.Join(errs...)
	}
	if err := delayInto(ctx, w, l, rest, strayDelay, 10); err != nil {
		return nil, "", 0, errors.Join(err, undo())
	}
	// Let the leader settle at the full delay before the transfer.
	if !sleep(ctx, time.Second) {
		return nil, "", 0, errors.Join(ctx.Err(), undo())
	}
	target := rest[rng.IntN(len(rest))]
	desc := fmt.Sprintf("%v -> %s delayed %v, then TimeoutNow from %s to %s", names(rest), l.name, strayDelay, l.name, target.name)
	if err := w.sendTimeoutNow(ctx, l, target); err != nil {
		// A fault in itself (the target may be down), not a harness error.
		desc += fmt.Sprintf(" failed: %v", err)
	}
	return undo, desc, between(rng, 1500*time.Millisecond, 2500*time.Millisecond), nil
}

// sendTimeoutNow sends to's Raft the TimeoutNow RPC that from sends at the
// end of a leadership transfer, from from's namespace over mutual TLS with
// from's certificate.
func (w *world) sendTimeoutNow(ctx context.Context, from, to *proc) error {
	cert, key := w.sec.serverFiles(from.name)
	cfg, err := client.TLSConfig{CAFile: w.sec.caFile, CertFile: cert, KeyFile: key}.Build()
	if err != nil {
		return err
	}
	// Servers are verified by role, not by address (cluster/internal/transport/tls.go);
	// the nemesis need not check whom it reaches at a server's address.
	cfg.InsecureSkipVerify = true
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		return w.net.DialFrom(ctx, from.name, "tcp", addr)
	}
	stream := &dialStream{ctx: ctx, dial: dial, tls: cfg, done: make(chan struct{})}
	trans := raft.NewNetworkTransport(stream, 1, 5*time.Second, io.Discard)
	defer trans.Close()
	fromAddr := fmt.Sprintf("%s:%d", w.net.Addr(from.name), portRaft)
	toAddr := raft.ServerAddress(fmt.Sprintf("%s:%d", w.net.Addr(to.name), portRaft))
	req := &raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{
		ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(from.name), Addr: []byte(fromAddr),
	}}
	done := make(chan error, 1)
	go func() { done <- trans.TimeoutNow(raft.ServerID(to.name), toAddr, req, &raft.TimeoutNowResponse{}) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dialStream is a raft.StreamLayer that only dials, with TLS (plain TCP
// when tls is nil): the nemesis sends one RPC and accepts none.
type dialStream struct {
	ctx  context.Context
	dial func(context.Context, string) (net.Conn, error)
	tls  *tls.Config
	done chan struct{}
}

func (s *dialStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	raw, err := s.dial(ctx, string(addr))
	if err != nil || s.tls == nil {
		return raw, err
	}
	conn := tls.Client(raw, s.tls)
	if err := conn.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	return conn, nil
}

func (s *dialStream) Accept() (net.Conn, error) {
	<-s.done
	return nil, net.ErrClosed
}

func (s *dialStream) Close() error {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	return nil
}

func (s *dialStream) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
