package integration

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/worker"
	"github.com/tenure-io/tenure/test/harness"
)

// The placement of a group's keys over its workers (docs/http-api.md,
// "Groups and placement"), tested against three real servers with
// worker.Worker as an application runs it: each worker in-process with a
// client of its own, except the one that is SIGKILLed, which is a
// `tenure demo-worker` process. What users rely on:
//
//  1. every key is owned by exactly one worker, the spread is even and no
//     worker exceeds its maximum: TestPlacementSpreadsEvenly
//  2. a worker that joins takes about 1/N of the keys and nothing else
//     moves: TestPlacementWorkerJoinMovesFewKeys
//  3. the keys of a worker that dies are owned again within TTL plus the
//     gossip failure detection, under larger fencing tokens:
//     TestPlacementKilledWorkerKeysMove
//  4. a drained worker hands each key over only after its handler
//     returned, and the next owner starts soon after:
//     TestPlacementDrainHandsOffWithoutOverlap
//  5. a disabled key is handed back and nobody takes it until it is
//     enabled again: TestPlacementDisabledKeyIsReleased
//  6. a key that comes back to a worker while that worker's handler for it
//     is still finishing is owned again once the handler returned:
//     TestPlacementKeyBackWhileHandingOver
//
// Every test also checks, from the handler runs it recorded, that no two
// handlers of a key ever ran at the same time and that the fencing tokens
// of a key's successive owners increase.

// TestPlacementSpreadsEvenly: 1024 keys over 64 workers settle with every
// key owned by exactly one worker (its handler runs, and the group shows
// it as holder and target), 16 keys each. With a per-worker maximum and
// capacities that cannot take every key, each worker owns exactly its
// limit and the rest of the keys stay free.
func TestPlacementSpreadsEvenly(t *testing.T) {
	c := startCluster(t, 3)
	admin := adminClient(t, c)

	t.Run("1024 keys over 64 workers", func(t *testing.T) {
		const keys, workers = 1024, 64
		runs := newRunLog()
		putGroup(t, admin, "partitions", "partitions/", keys, 0)
		f := newWorkerFleet(t, c, "partitions", largeFleetTTL, runs)
		owners := ids(f.startN(t, "spread", workers))
		holders, took := waitSettled(t, admin, f, owners, keys, settleTimeout)
		t.Logf("%d workers started to %d keys owned: %v", workers, keys, took.Round(time.Millisecond))
		checkEven(t, holders, owners)
		runs.checkExclusive(t)
	})

	t.Run("max_per_worker and capacities", func(t *testing.T) {
		// 64 keys, max 6 per worker, 8 workers of which two take at most 4:
		// 6·6 + 2·4 = 44 keys owned, 20 without an owner.
		const keys, maxPerWorker = 64, 6
		runs := newRunLog()
		putGroup(t, admin, "bounded", "bounded/", keys, maxPerWorker)
		f := newWorkerFleet(t, c, "bounded", placementTTL, runs)
		limit := map[string]int{}
		var owners []string
		for i := range 8 {
			id := fmt.Sprintf("bounded-%d", i)
			limit[id] = maxPerWorker
			if i < 2 {
				f.start(t, id, worker.WithCapacity(4))
				limit[id] = 4
			} else {
				f.start(t, id)
			}
			owners = append(owners, id)
		}
		const owned = 6*6 + 2*4
		holders, took := waitSettled(t, admin, f, owners, owned, settleTimeout)
		t.Logf("8 workers started to %d keys owned: %v", owned, took.Round(time.Millisecond))
		for w, n := range countByWorker(holders, owners) {
			if n != limit[w] {
				t.Errorf("%s owns %d keys, want its limit %d (the group has more keys than the workers take)", w, n, limit[w])
			}
		}
		runs.checkExclusive(t)
	})
}

// TestPlacementWorkerJoinMovesFewKeys: once 1024 keys are settled over 64
// workers, a 65th joins. It takes its share and nothing else moves: every
// key whose handler started after the join started on the new worker, and
// at most ceil(1024/65) = 16 keys moved.
//
// Why exactly the new worker's share: the plan is sticky and bounded, so an
// existing worker keeps its keys up to its new quota and gives up only the
// ones over it, which only the new worker has room for. No slack is
// allowed: a key moved between two existing workers would break the second
// assertion anyway.
func TestPlacementWorkerJoinMovesFewKeys(t *testing.T) {
	const keys, workers = 1024, 64
	_, admin, runs, f := startPlacement(t, "partitions", keys, largeFleetTTL)
	owners := ids(f.startN(t, "join", workers))
	before, took := waitSettled(t, admin, f, owners, keys, settleTimeout)
	t.Logf("%d keys over %d workers settled in %v", keys, workers, took.Round(time.Millisecond))

	joinedAt := runs.now()
	newcomer := f.start(t, "join-new").id
	owners = append(owners, newcomer)
	n := len(owners)
	share := keys / n
	var after map[string]string
	start := time.Now()
	poll.WaitFor(t, settleTimeout, func() error {
		_, h, err := f.settledView(admin, owners, keys)
		if err != nil {
			return err
		}
		if got := countByWorker(h, owners)[newcomer]; got < share {
			return fmt.Errorf("%s owns %d keys, want its share %d", newcomer, got, share)
		}
		after = h
		return nil
	})
	t.Logf("%s owns its share %v after it started", newcomer, time.Since(start).Round(time.Millisecond))

	var moved []string
	for key, w := range after {
		if before[key] != w {
			moved = append(moved, key)
			if w != newcomer {
				t.Errorf("%s moved from %s to %s, want only moves to the new worker %s", key, before[key], w, newcomer)
			}
		}
	}
	for key, rs := range runs.startedSince(joinedAt) {
		for _, r := range rs {
			if r.worker != newcomer {
				t.Errorf("%s: %s's handler started after %s joined (token %d): only the new worker may take keys", key, r.worker, newcomer, r.token)
			}
		}
	}
	bound := (keys + n - 1) / n
	if len(moved) > bound {
		t.Errorf("%d of %d keys moved when worker %d joined, want at most ceil(%d/%d) = %d", len(moved), keys, n, keys, n, bound)
	}
	t.Logf("%d of %d keys moved to the new worker (bound %d)", len(moved), keys, bound)
	checkEven(t, after, owners)
	runs.checkExclusive(t)
}

// TestPlacementKilledWorkerKeysMove: 32 keys over three in-process workers
// and one `tenure demo-worker` process with a 2s TTL. The process is
// SIGKILLed, so it neither releases its leases nor leaves gossip: its keys
// are owned by the other three once its leases expired and gossip declared
// it dead, each under a token larger than the killed worker's. The bound
// asserted is TTL + 15s: the suspicion timeout of memberlist's LAN
// defaults is 4s with two confirmations from other members (measured: 6s
// in all, of which the leases took 2s).
func TestPlacementKilledWorkerKeysMove(t *testing.T) {
	const keys = 32
	c, admin, runs, f := startPlacement(t, "partitions", keys, placementTTL)
	survivors := ids(f.startN(t, "stay", 3))
	victim := startDemoWorker(t, c, "partitions", "doomed", placementTTL)
	owners := append(slices.Clone(survivors), victim.id)

	// The demo worker's handlers are not in runs: check its keys from the
	// group alone.
	var doomed map[string]uint64 // its keys and their tokens
	poll.WaitFor(t, settleTimeout, func() error {
		g, err := f.view(admin)
		if err != nil {
			return err
		}
		doomed = map[string]uint64{}
		inProcess := &client.Group{Name: g.Name}
		for _, k := range g.Keys {
			if k.Target == victim.id {
				if k.State != "held" || k.Worker != victim.id {
					return fmt.Errorf("%s targets %s but is %s by %q", k.Key, victim.id, k.State, k.Worker)
				}
				doomed[k.Key] = k.Token
				continue
			}
			inProcess.Keys = append(inProcess.Keys, k)
		}
		if len(doomed) != keys/len(owners) {
			return fmt.Errorf("%s owns %d keys, want %d", victim.id, len(doomed), keys/len(owners))
		}
		_, err = settled(inProcess, runs, survivors, keys-len(doomed))
		return err
	})

	killed := time.Now()
	victim.kill()
	bound := placementTTL + 15*time.Second
	var (
		after   *client.Group
		expired time.Duration // when none of its keys was held by it any more
	)
	poll.WaitFor(t, bound, func() error {
		g, err := f.view(admin)
		if err != nil {
			return err
		}
		if expired == 0 && !slices.ContainsFunc(g.Keys, func(k client.GroupKey) bool { return k.State == "held" && k.Worker == victim.id }) {
			expired = time.Since(killed)
		}
		if _, err := settled(g, runs, survivors, keys); err != nil {
			return err
		}
		after = g
		return nil
	})
	t.Logf("the killed worker's %d leases were gone %v after SIGKILL, its keys owned again after %v (TTL %v; bound %v)",
		len(doomed), expired.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond), placementTTL, bound)
	for _, k := range after.Keys {
		if old, ok := doomed[k.Key]; ok && k.Token <= old {
			t.Errorf("%s: %s holds it with token %d, not above the killed worker's %d", k.Key, k.Worker, k.Token, old)
		}
	}
	checkEven(t, heldBy(after), survivors)
	runs.checkExclusive(t)
}

// TestPlacementDrainHandsOffWithoutOverlap: 60 keys over six workers. A
// worker drained in-process (Worker.Drain), then another drained by an
// operator (DrainWorker), hands every key back: Drain returns once it
// holds nothing, each of its keys is then owned by another worker, whose
// handler started after the drained worker's handler for that key returned
// and within a short gap (the next owner was queued with a blocking
// acquire, so the gap is the release's commit and the answer).
func TestPlacementDrainHandsOffWithoutOverlap(t *testing.T) {
	const keys = 60
	// maxGap is generous (the gaps measured are tens of milliseconds under
	// the race detector) but below the TTL: a hand-off that waited for the
	// lease to expire, rather than for its release, fails.
	const maxGap = time.Second
	_, admin, runs, f := startPlacement(t, "partitions", keys, placementTTL)
	// Handlers finish their work for a while after their context ends, as
	// real ones do (a flush, a commit of offsets): the key must not be
	// handed over before they return.
	f.linger = 200 * time.Millisecond
	workers := f.startN(t, "drain", 6)
	owners := ids(workers)
	holders, _ := waitSettled(t, admin, f, owners, keys, settleTimeout)

	// handedOver checks, for every key the drained worker owned, that the
	// next run started after its run returned, within maxGap, on a worker
	// that owns it now, and returns the largest gap.
	handedOver := func(t *testing.T, drained string, owned []string, now map[string]string) time.Duration {
		t.Helper()
		var worst time.Duration
		for _, key := range owned {
			hist := runs.history(key)
			i := -1
			for j, r := range hist {
				if r.worker == drained {
					i = j
				}
			}
			if i < 0 || i+1 >= len(hist) {
				t.Errorf("%s: no run after %s's: %+v", key, drained, hist)
				continue
			}
			prev, next := hist[i], hist[i+1]
			if next.worker != now[key] {
				t.Errorf("%s: %s ran it after %s, but %s owns it now", key, next.worker, drained, now[key])
			}
			gap := next.start - prev.end
			worst = max(worst, gap)
			if gap < 0 {
				t.Errorf("%s: %s's handler started %v before %s's returned", key, next.worker, -gap, drained)
			} else if gap > maxGap {
				t.Errorf("%s: %s's handler started %v after %s's returned, want at most %v", key, next.worker, gap, drained, maxGap)
			}
		}
		return worst
	}

	// drain drains w through drainIt, which returns once the drain is
	// done as its caller sees it; then every key w owned is owned again
	// by the others, handed over in order, and the keys are even over
	// them. It returns who owns each key now.
	drain := func(t *testing.T, how string, w *fleetWorker, timeout time.Duration, drainIt func(ctx context.Context)) map[string]string {
		t.Helper()
		mine := harness.OwnedBy(holders, w.id)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		drainIt(ctx)
		took := time.Since(start)
		owners = slices.DeleteFunc(owners, func(id string) bool { return id == w.id })
		now, settledIn := waitSettled(t, admin, f, owners, keys, 10*time.Second)
		gap := handedOver(t, w.id, mine, now)
		t.Logf("%s: %d keys handed back in %v; all owned again %v later; longest hand-off gap %v",
			how, len(mine), took.Round(time.Millisecond), settledIn.Round(time.Millisecond), gap.Round(time.Microsecond))
		checkEven(t, now, owners)
		return now
	}

	t.Run("Worker.Drain", func(t *testing.T) {
		w := workers[0]
		holders = drain(t, "Drain", w, 30*time.Second, func(ctx context.Context) {
			if err := w.w.Drain(ctx); err != nil {
				t.Fatalf("Drain: %v", err)
			}
			if got := w.w.Keys(); len(got) > 0 {
				t.Errorf("after Drain, %s still holds %v", w.id, got)
			}
			if got := runs.runningOf(w.id); len(got) > 0 {
				t.Errorf("after Drain, %s's handlers still run for %v", w.id, got)
			}
		})
	})

	t.Run("operator DrainWorker", func(t *testing.T) {
		w := workers[1]
		drain(t, "DrainWorker", w, 10*time.Second, func(ctx context.Context) {
			if err := admin.Groups().DrainWorker(ctx, w.id, true); err != nil {
				t.Fatalf("DrainWorker: %v", err)
			}
			poll.WaitFor(t, 30*time.Second, func() error {
				g, err := groupView(admin, f.group)
				if err != nil {
					return err
				}
				for _, k := range g.Keys {
					if k.Worker == w.id && k.State == "held" {
						return fmt.Errorf("%s still holds %s", w.id, k.Key)
					}
				}
				if got := runs.runningOf(w.id); len(got) > 0 {
					return fmt.Errorf("%s's handlers still run for %v", w.id, got)
				}
				return nil
			})
		})
	})
	runs.checkExclusive(t)
}

// TestPlacementDisabledKeyIsReleased: an operator disables a held key: its
// holder's handler ends and the lease is released (not left to expire);
// nobody takes the key
// while it stays disabled, though every worker runs; enabled again, it
// gets an owner with a larger token.
func TestPlacementDisabledKeyIsReleased(t *testing.T) {
	const keys = 16
	const quiet = 3 * time.Second
	_, admin, runs, f := startPlacement(t, "partitions", keys, placementTTL)
	owners := ids(f.startN(t, "ctl", 3))
	holders, _ := waitSettled(t, admin, f, owners, keys, settleTimeout)

	const key = "partitions/7"
	holder := holders[key]
	run := runs.running(key)
	if len(run) != 1 {
		t.Fatalf("%s: %d handlers run, want 1", key, len(run))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := admin.Groups().SetControl(ctx, key, client.KeyControl{Disabled: true}); err != nil {
		t.Fatalf("disable %s: %v", key, err)
	}
	free := func() error {
		if err := f.alive(); err != nil {
			return err
		}
		if got := runs.running(key); len(got) > 0 {
			return fmt.Errorf("%s: handlers run: %+v", key, got)
		}
		g, err := groupView(admin, f.group)
		if err != nil {
			return err
		}
		for _, k := range g.Keys {
			if k.Key == key && (k.State != "free" || !k.Disabled || k.Target != "") {
				return fmt.Errorf("%s is %s by %q, target %q, disabled %v; want free, no target, disabled", key, k.State, k.Worker, k.Target, k.Disabled)
			}
		}
		return nil
	}
	poll.WaitFor(t, 15*time.Second, free)
	t.Logf("disabled %s: %s's handler returned and the key was free %v later", key, holder, time.Since(start).Round(time.Millisecond))
	l, _, err := admin.Leases().Get(ctx, key, nil)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if l.Reason != client.ReasonReleased || l.Metadata["worker"] != holder || l.Token != run[0].token {
		t.Errorf("%s is free with reason %q, last worker %s, token %d; want released by %s, token %d",
			key, l.Reason, l.Metadata["worker"], l.Token, holder, run[0].token)
	}
	poll.Holds(t, quiet, free)
	if _, err := settled(mustView(t, admin, f.group), runs, owners, keys-1); err != nil {
		t.Errorf("with %s disabled: %v", key, err)
	}

	if err := admin.Groups().SetControl(ctx, key, client.KeyControl{}); err != nil {
		t.Fatalf("enable %s: %v", key, err)
	}
	start = time.Now()
	holders, _ = waitSettled(t, admin, f, owners, keys, 15*time.Second)
	t.Logf("enabled %s: owned by %s %v later", key, holders[key], time.Since(start).Round(time.Millisecond))
	if now := runs.running(key); len(now) != 1 || now[0].token <= run[0].token {
		t.Errorf("%s after enable: running %+v, want one handler with a token above %d", key, now, run[0].token)
	}
	runs.checkExclusive(t)
}

// TestPlacementKeyBackWhileHandingOver: a key that comes back to its worker
// while the worker's handler for it is still finishing its work (3s after
// its context ended) is owned again by that worker once the handler
// returned; it must not stay without an owner until some later change of
// the group.
func TestPlacementKeyBackWhileHandingOver(t *testing.T) {
	const keys = 4
	const linger = 3 * time.Second
	_, admin, runs, f := startPlacement(t, "partitions", keys, placementTTL)
	f.linger = linger
	owners := ids(f.startN(t, "back", 1))
	waitSettled(t, admin, f, owners, keys, settleTimeout)

	const key = "partitions/1"
	first := runs.running(key)
	if len(first) != 1 {
		t.Fatalf("%s: %d handlers run, want 1", key, len(first))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := admin.Groups().SetControl(ctx, key, client.KeyControl{Disabled: true}); err != nil {
		t.Fatalf("disable %s: %v", key, err)
	}
	poll.WaitFor(t, 10*time.Second, func() error {
		h := runs.history(key)
		if last := h[len(h)-1]; !last.stopping {
			return fmt.Errorf("%s: the handler was not told to stop: %+v", key, last)
		}
		return nil
	})
	if err := admin.Groups().SetControl(ctx, key, client.KeyControl{}); err != nil {
		t.Fatalf("enable %s: %v", key, err)
	}
	enabled := time.Now()
	if h := runs.history(key); !h[len(h)-1].stopping {
		t.Fatalf("%s: the handler returned before the key was enabled again; linger %v is too short for this test", key, linger)
	}
	waitSettled(t, admin, f, owners, keys, linger+10*time.Second)
	t.Logf("%s was owned again %v after it was enabled (its previous handler worked on for %v)", key, time.Since(enabled).Round(time.Millisecond), linger)
	if now := runs.working(key); now[0].token <= first[0].token {
		t.Errorf("%s: token %d after it came back, want above %d", key, now[0].token, first[0].token)
	}
	runs.checkExclusive(t)
}

// TestPlacementByLoadEvensZipfLoad: 1024 keys over 64 workers, settled by
// count, whose keys carry Zipf-skewed loads (exponent 0.5, in a shuffled
// order) that the workers report on their renewals. Placed by count, the
// busiest worker carries well over its share; once the group is balanced
// by load (imbalance 1.2, at most 64 moves per 5 s), every key settles on
// its target again with the busiest worker within 1.25 times the mean
// load, and no key ever ran on two workers at once. A 65th worker that
// joins then takes keys with at most 1/N of the keys plus the budget
// moved, the load staying within 1.25 of the mean. The figures are in
// test/bench/results/2026-11-30-placement.md.
func TestPlacementByLoadEvensZipfLoad(t *testing.T) {
	c := startCluster(t, 3)
	admin := adminClient(t, c)
	const keys, workers = 1024, 64
	runs := newRunLog()
	putGroup(t, admin, "zipf", "zipf/", keys, 0)
	f := newWorkerFleet(t, c, "zipf", largeFleetTTL, runs)
	fleet := f.startN(t, "zipf", workers)
	owners := ids(fleet)
	holders, took := waitSettled(t, admin, f, owners, keys, settleTimeout)
	t.Logf("%d workers started to %d keys owned: %v", workers, keys, took.Round(time.Millisecond))

	load := zipfLoads("zipf/", keys, 0.5)
	byCount := maxOverMean(holders, owners, load)
	// Each worker reports the loads of the keys it holds, as they move.
	stop := make(chan struct{})
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		for {
			f.mu.Lock()
			fleet := slices.Clone(f.workers)
			f.mu.Unlock()
			for _, fw := range fleet {
				for _, k := range fw.w.Keys() {
					fw.w.ReportLoad(k, load[k]) // fails only for a key that just moved away
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	defer func() { close(stop); <-reported }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	budget := 64
	if _, err := admin.Groups().SetBalance(ctx, "zipf", client.GroupBalance{By: "load", MoveBudget: &budget, MoveInterval: "5s"}); err != nil {
		t.Fatal(err)
	}
	start, from := time.Now(), runs.now()
	var byLoad float64
	poll.WaitFor(t, 3*time.Minute, func() error {
		_, h, err := f.settledView(admin, owners, keys)
		if err != nil {
			return err
		}
		holders = h
		if byLoad = maxOverMean(h, owners, load); byLoad > 1.25 {
			return fmt.Errorf("the busiest worker carries %.3f times the mean load, want at most 1.25", byLoad)
		}
		return nil
	})
	moved := 0
	for _, rs := range runs.startedSince(from) {
		moved += len(rs)
	}
	t.Logf("max/mean worker load: %.3f placed by count, %.3f by load after %v (%d handler starts after the switch)",
		byCount, byLoad, time.Since(start).Round(time.Millisecond), moved)

	// A 65th worker joins: it takes keys, the load stays within 1.25 of
	// the mean, and at most 1/N of the keys plus the budget move.
	start, from = time.Now(), runs.now()
	owners = append(owners, f.start(t, "zipf-join").id)
	poll.WaitFor(t, 3*time.Minute, func() error {
		_, h, err := f.settledView(admin, owners, keys)
		if err != nil {
			return err
		}
		if n := countByWorker(h, owners)["zipf-join"]; n == 0 {
			return fmt.Errorf("the worker that joined holds no key yet")
		}
		if byLoad = maxOverMean(h, owners, load); byLoad > 1.25 {
			return fmt.Errorf("the busiest worker carries %.3f times the mean load, want at most 1.25", byLoad)
		}
		return nil
	})
	moved = 0
	for _, rs := range runs.startedSince(from) {
		moved += len(rs)
	}
	if most := keys/len(owners) + budget; moved > most {
		t.Errorf("a join moved %d keys, want at most 1/N of them plus the budget, %d", moved, most)
	}
	t.Logf("a 65th worker joined: %d keys moved in %v, max/mean worker load %.3f", moved, time.Since(start).Round(time.Millisecond), byLoad)
	runs.checkExclusive(t)
}

// zipfLoads gives the n keys prefix0 … a load of 1000/(r+1)^s, where r is
// the key's rank in a fixed shuffle.
func zipfLoads(prefix string, n int, s float64) map[string]float64 {
	rank := rand.New(rand.NewPCG(7, 7)).Perm(n)
	out := make(map[string]float64, n)
	for i := range n {
		out[fmt.Sprintf("%s%d", prefix, i)] = 1000 / math.Pow(float64(rank[i]+1), s)
	}
	return out
}

// maxOverMean is the busiest worker's load over the mean worker load.
func maxOverMean(holders map[string]string, owners []string, load map[string]float64) float64 {
	per := make(map[string]float64, len(owners))
	total := 0.0
	for k, w := range holders {
		per[w] += load[k]
		total += load[k]
	}
	most := 0.0
	for _, w := range owners {
		most = max(most, per[w])
	}
	return most / (total / float64(len(owners)))
}

// TestWorkersRollKeepsTheAvailabilityBudget: `tenure workers roll` restarts
// the 8 workers of a 64-key group two at a time under an availability
// budget of 4 (max_moving). Every worker is restarted once, at no moment
// are more than 4 keys without a running handler (a drain of two workers
// would otherwise move their 16 keys at once), every key ends owned again,
// and no key ran on two workers at once.
func TestWorkersRollKeepsTheAvailabilityBudget(t *testing.T) {
	c, admin, runs, f := startPlacement(t, "rolling", 64, placementTTL)
	owners := ids(f.startN(t, "roll", 8))
	waitSettled(t, admin, f, owners, 64, settleTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := admin.Groups().SetBalance(ctx, "rolling", client.GroupBalance{By: "keys", MaxMoving: 4}); err != nil {
		t.Fatal(err)
	}
	from := runs.now()
	out, code, restarted := rollWorkers(t, c, f, "rolling", 2)
	if code != 0 || !strings.Contains(out, "restarted 8 workers of group rolling") {
		t.Fatalf("tenure workers roll exited %d:\n%s", code, out)
	}
	if slices.Sort(restarted); !slices.Equal(restarted, owners) {
		t.Errorf("restarted %v, want every worker once: %v", restarted, owners)
	}
	waitSettled(t, admin, f, owners, 64, settleTimeout)
	most := runs.mostUnownedAtOnce(from)
	if most > 4 {
		t.Errorf("%d keys had no running handler at once during the roll, the budget is 4", most)
	}
	t.Logf("rolled 8 workers, 2 at a time: at most %d keys unowned at once (budget 4)", most)
	runs.checkExclusive(t)
}

// rollWorkers runs `tenure workers roll group -batch N` over f's workers.
// Its restart command tells the test which worker to restart, and returns
// once the test restarted it (f.restart), as `systemctl restart` would. It
// returns the command's output and exit code and the workers restarted, in
// order.
func rollWorkers(t *testing.T, c *cluster, f *workerFleet, group string, batch int) (string, int, []string) {
	t.Helper()
	dir := t.TempDir()
	var restarted []string
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				id, ok := strings.CutPrefix(e.Name(), "restart-")
				if !ok || slices.Contains(restarted, id) {
					continue
				}
				if err := f.restart(t, id); err != nil {
					t.Error(err)
				}
				restarted = append(restarted, id)
				os.WriteFile(filepath.Join(dir, "up-"+id), nil, 0o600)
			}
		}
	}()
	out, code := c.tenureCLI(t, "", "workers", "roll", group, "-batch", fmt.Sprint(batch), "-timeout", "2m", "--",
		"sh", "-c", `touch "$0/restart-$TENURE_WORKER" && while [ ! -e "$0/up-$TENURE_WORKER" ]; do sleep 0.05; done`, dir)
	close(stop)
	<-watched
	return out, code, restarted
}
