package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/worker"
)

// Warm hand-offs (docs/placement.md, "Warm hand-off"), with workers that
// prepare each key for prepareTook before they own it (worker.WithPrepare)
// and handlers that finish for linger after their context ends. What
// users rely on: a key that moves from a live worker is prepared by the
// new one while the old one still works on it; the old one is asked to
// finish only then, and the new one starts within one commit of the old
// one's return; no key ever runs twice at once, and tokens grow.

const (
	prepareTook = 300 * time.Millisecond
	// warmMaxGap bounds the time between the old handler's return and the
	// new one's start: generous, as maxGap of the drain test, but far
	// below both the TTL and the prepare time (a minute), so that a
	// hand-off that waited for either fails.
	warmMaxGap = time.Second
)

// warmFleet makes every worker of f prepare for prepareTook, with a
// prepare time of a minute.
func warmFleet(f *workerFleet) {
	f.opts = func(id string) []worker.WorkerOption {
		return []worker.WorkerOption{worker.WithPrepare(time.Minute, f.runs.preparer(id, prepareTook))}
	}
}

// waitEven waits until the group is settled with its keys spread evenly
// over owners, and returns how long that took.
func waitEven(t *testing.T, admin *client.Client, f *workerFleet, owners []string, keys int, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	lo := keys / len(owners)
	poll.WaitFor(t, timeout, func() error {
		_, h, err := f.settledView(admin, owners, keys)
		if err != nil {
			return err
		}
		for w, n := range countByWorker(h, owners) {
			if n < lo || n > (keys+len(owners)-1)/len(owners) {
				return fmt.Errorf("%s owns %d keys, want %d", w, n, lo)
			}
		}
		return nil
	})
	return time.Since(start)
}

// TestPlacementWarmHandOffOnJoin: a worker joins a group whose keys one
// worker holds: each key that moves to it is prepared first, then handed
// over within one commit of the old handler's return, long before the
// prepare time of a minute.
func TestPlacementWarmHandOffOnJoin(t *testing.T) {
	const keys = 32
	_, admin, runs, f := startPlacement(t, "warm", keys, placementTTL)
	f.linger = 100 * time.Millisecond
	warmFleet(f)
	f.start(t, "warm-0")
	waitSettled(t, admin, f, []string{"warm-0"}, keys, settleTimeout)
	from := runs.now()
	f.start(t, "warm-1")
	took := waitEven(t, admin, f, []string{"warm-0", "warm-1"}, keys, 30*time.Second)
	n, gap := runs.checkWarm(t, from, warmMaxGap)
	if n != keys/2 {
		t.Errorf("%d keys moved to the new worker, want %d", n, keys/2)
	}
	t.Logf("%d keys handed over warm in %v (prepare %v each); longest gap %v", n, took.Round(time.Millisecond), prepareTook, gap.Round(time.Microsecond))
	runs.checkExclusive(t)
}

// TestWorkersRollHandsOffWarm: `tenure workers roll` restarts 64 workers
// of a 1,024-key group, 8 at a time. Every key moves twice per restart
// of its worker (away to the others, then back to the restarted one by
// rendezvous), and every one of those hand-overs is warm: prepared by
// the new worker while the old one still worked, and with a gap of at
// most one commit after the old handler returned. The gaps are the
// measure of issue 30's rolling restart (docs/placement.md).
func TestWorkersRollHandsOffWarm(t *testing.T) {
	const keys, workers = 1024, 64
	c, admin, runs, f := startPlacement(t, "rolling", keys, placementTTL)
	f.linger = 20 * time.Millisecond
	warmFleet(f)
	owners := ids(f.startN(t, "roll", workers))
	waitSettled(t, admin, f, owners, keys, settleTimeout)
	from := runs.now()
	start := time.Now()
	out, code, _ := rollWorkers(t, c, f, "rolling", 8)
	if code != 0 || !strings.Contains(out, "restarted 64 workers of group rolling") {
		t.Fatalf("tenure workers roll exited %d:\n%s", code, out)
	}
	took := time.Since(start)
	waitEven(t, admin, f, owners, keys, settleTimeout)
	n, gap := runs.checkWarm(t, from, warmMaxGap)
	if n < keys {
		t.Errorf("%d hand-overs during the roll, want at least %d (every key moves with its worker)", n, keys)
	}
	t.Logf("rolled %d workers 8 at a time in %v: %d warm hand-overs (prepare %v each), longest gap %v, at most %d keys unowned at once",
		workers, took.Round(time.Millisecond), n, prepareTook, gap.Round(time.Microsecond), runs.mostUnownedAtOnce(from))
	runs.checkExclusive(t)
}

// TestPlacementWarmHandOffWhenPrepareFails: a worker whose prepare fails
// says so at once, and the keys move to it unprepared well before its
// prepare time of a minute; a worker whose prepare outlasts its prepare
// time (and ignores the end of its context for a while) gets the keys
// once that time passed, and its handler of a key starts only after its
// prepare of that key returned.
func TestPlacementWarmHandOffWhenPrepareFails(t *testing.T) {
	const keys = 8
	t.Run("fails", func(t *testing.T) {
		_, admin, runs, f := startPlacement(t, "failing", keys, placementTTL)
		f.start(t, "cold-0")
		waitSettled(t, admin, f, []string{"cold-0"}, keys, settleTimeout)
		failed := make(chan string, keys)
		f.start(t, "cold-1", worker.WithPrepare(time.Minute, func(ctx context.Context, key string) error {
			failed <- key
			return errors.New("no state to warm")
		}))
		took := waitEven(t, admin, f, []string{"cold-0", "cold-1"}, keys, 30*time.Second)
		if len(failed) == 0 {
			t.Error("the new worker was never asked to prepare")
		}
		t.Logf("%d keys moved unprepared %v after the join (prepare time 1m)", len(failed), took.Round(time.Millisecond))
		runs.checkExclusive(t)
	})
	t.Run("outlasts its time", func(t *testing.T) {
		_, admin, runs, f := startPlacement(t, "slow", keys, placementTTL)
		f.start(t, "slow-0")
		waitSettled(t, admin, f, []string{"slow-0"}, keys, settleTimeout)
		var mu sync.Mutex
		returned := map[string]time.Duration{}
		from := runs.now()
		f.start(t, "slow-1", worker.WithPrepare(2*time.Second, func(ctx context.Context, key string) error {
			<-ctx.Done()
			time.Sleep(500 * time.Millisecond) // a prepare slow to stop
			mu.Lock()
			returned[key] = runs.now()
			mu.Unlock()
			return ctx.Err()
		}))
		waitEven(t, admin, f, []string{"slow-0", "slow-1"}, keys, 30*time.Second)
		mu.Lock()
		defer mu.Unlock()
		for key, runsOf := range runs.startedSince(from) {
			for _, r := range runsOf {
				if r.worker != "slow-1" {
					continue
				}
				at, ok := returned[key]
				if !ok {
					t.Errorf("%s: slow-1's handler started at %v, but its prepare had not returned", key, r.start)
				} else if r.start < at {
					t.Errorf("%s: slow-1's handler started at %v, before its prepare returned at %v", key, r.start, at)
				}
			}
		}
		if len(returned) == 0 {
			t.Error("slow-1 prepared nothing")
		}
		runs.checkExclusive(t)
	})
}
