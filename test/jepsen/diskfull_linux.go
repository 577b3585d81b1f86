package jepsen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tenure-io/tenure/test/jepsen/check"
)

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
