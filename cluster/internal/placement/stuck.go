package placement

import (
	"cmp"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster/internal/clock"
	"github.com/tenure-io/tenure/fsm"
)

// Stuck workers: alive on gossip, but not taking the keys the plan targets
// at them (cut off from the API, or wedged).
//
// The leader's Tracker watches, on its monotonic clock, every key of
// every group: since when it has been free, and since when it has been free
// while targeted at its current target. A key that is held by someone
// else (a previous owner handing it back) does not count against its
// target: the holder decides when it comes free. A worker one of whose
// targets stayed free for longer than the group's grace is stuck.
//
// A stuck worker keeps the keys it holds, gets no new keys, and loses the
// targets it does not hold, which the plan gives to the next workers in
// rendezvous order. It stays stuck for a quarantine, and until it holds
// every key still targeted at it. The quarantine is one grace the first
// time and doubles (up to maxQuarantine graces) each time the worker is
// found stuck again soon after it was let back, so a worker that can never
// take keys does not flap between getting keys and losing them: each round
// costs one grace of its keys being free, and rounds grow rarer. A worker
// that merely restarted is stuck at most once, for one grace, and its
// record is forgotten once it has gone forgetAfter quarantines without
// being stuck again.
//
// A tracker lives for one leadership: counting starts at promotion, so a
// new leader never marks a worker stuck for time it did not watch; stuck
// marks it finds in the state machine (from the previous leader) count as
// found at its promotion.

const (
	// maxQuarantine bounds the doubling quarantine, in graces.
	maxQuarantine = 16
	// forgetAfter: a worker's strikes are forgotten after this many of its
	// last quarantines without being stuck again.
	forgetAfter = 4
)

// DefaultStuckGrace is the default grace of a group that sets none and
// whose keys never had a lease: twice the Go client Worker's default TTL.
const DefaultStuckGrace = 20 * time.Second

// MinStuckGrace and MaxStuckGrace bound a group's stuck grace (and the
// default grace): a grace shorter than a lease renewal would
// mark healthy workers stuck; one longer than a day leaves keys unowned
// for longer than anyone waits.
const (
	MinStuckGrace = 100 * time.Millisecond
	MaxStuckGrace = 24 * time.Hour
)

// Tracker is the leader's tracking of stuck workers for one leadership.
// Its methods are safe for concurrent use.
type Tracker struct {
	clock clock.Clock
	// defaultGrace is the grace of a group that sets none and whose keys
	// never had a lease.
	defaultGrace time.Duration

	mu     sync.Mutex
	groups map[string]*groupTrack
}

type groupTrack struct {
	// free holds, per key, since when it has been free (observed).
	free map[string]time.Time
	// waits holds, per key that is free and targeted, its target and since
	// when the key has been free while targeted at it.
	waits   map[string]keyWait
	workers map[string]*workerTrack
	grace   time.Duration
}

type keyWait struct {
	target string
	since  time.Time
}

type workerTrack struct {
	stuck bool
	// since: when it was last found stuck; until: when its quarantine ends.
	since, until time.Time
	// released is when it was last let back.
	released   time.Time
	quarantine time.Duration
	strikes    int
}

// NewTracker returns a tracker that reads clock (monotonic readings) and
// gives defaultGrace to a group that sets none and whose keys never had a
// lease.
func NewTracker(clock clock.Clock, defaultGrace time.Duration) *Tracker {
	return &Tracker{clock: clock, defaultGrace: defaultGrace, groups: make(map[string]*groupTrack)}
}

// Holds reports whether a lease holder is worker: the worker's id itself,
// or "<id>#<suffix>" (the client Worker's holders).
func Holds(holder, worker string) bool {
	return holder == worker || worker != "" && wire.WorkerOf(holder) == worker
}

// groupGrace is the grace of g: its own setting, or twice the largest TTL
// of its keys' leases (held or last held), or def.
func groupGrace(g *fsm.Group, lease func(string) *fsm.Lease, def time.Duration) time.Duration {
	if g.StuckGrace > 0 {
		return g.StuckGrace
	}
	var ttl time.Duration
	for _, k := range g.Keys {
		if l := lease(k); l != nil && l.TTL > ttl {
			ttl = l.TTL
		}
	}
	return cmp.Or(2*ttl, def)
}

// Observe updates the tracking of group g from its plan and the leases of
// its keys, and returns the workers that are stuck now (sorted).
func (t *Tracker) Observe(g *fsm.Group, lease func(string) *fsm.Lease, control func(string) fsm.KeyControl) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	gt := t.groups[g.Name]
	if gt == nil {
		gt = &groupTrack{free: make(map[string]time.Time), waits: make(map[string]keyWait), workers: make(map[string]*workerTrack)}
		t.groups[g.Name] = gt
		// Marks of the previous leader count as found now.
		for _, w := range g.Stuck {
			gt.workers[w] = &workerTrack{stuck: true, since: now, strikes: 1}
		}
	}
	gt.grace = groupGrace(g, lease, t.defaultGrace)
	for _, w := range gt.workers {
		if w.stuck && w.until.IsZero() {
			w.quarantine, w.until = gt.grace, now.Add(gt.grace)
		}
	}

	inGroup := make(map[string]bool, len(g.Keys))
	// targets counts, per worker, the keys targeted at it; unheld those it
	// does not hold.
	targets, unheld := make(map[string]int), make(map[string]int)
	for _, k := range g.Keys {
		inGroup[k] = true
		l := lease(k)
		held := l != nil && l.Held
		if held || control(k).Disabled {
			delete(gt.free, k)
		} else if _, ok := gt.free[k]; !ok {
			gt.free[k] = now
		}
		target := g.Assignment[k]
		if target == "" {
			delete(gt.waits, k)
			continue
		}
		targets[target]++
		if held && Holds(l.Holder, target) {
			delete(gt.waits, k)
			continue
		}
		unheld[target]++
		if held {
			delete(gt.waits, k) // its holder decides when it comes free
			continue
		}
		if w, ok := gt.waits[k]; !ok || w.target != target {
			gt.waits[k] = keyWait{target: target, since: now}
		}
	}
	maps.DeleteFunc(gt.free, func(k string, _ time.Time) bool { return !inGroup[k] })
	for k, w := range gt.waits {
		if !inGroup[k] {
			delete(gt.waits, k)
			continue
		}
		if now.Sub(w.since) < gt.grace {
			continue
		}
		wt := gt.workers[w.target]
		if wt == nil {
			wt = &workerTrack{}
			gt.workers[w.target] = wt
		}
		if !wt.stuck {
			wt.strikes++
			wt.quarantine = gt.grace << min(wt.strikes-1, 4)
			wt.quarantine = min(wt.quarantine, maxQuarantine*gt.grace)
			wt.stuck, wt.since, wt.until = true, now, now.Add(wt.quarantine)
		}
	}
	var stuck []string
	for id, wt := range gt.workers {
		switch {
		case wt.stuck && !now.Before(wt.until) && unheld[id] == 0:
			wt.stuck, wt.released = false, now
		case !wt.stuck && now.Sub(wt.released) >= forgetAfter*wt.quarantine:
			delete(gt.workers, id)
		}
		if wt.stuck {
			stuck = append(stuck, id)
		}
	}
	sort.Strings(stuck)
	return stuck
}

// forget drops the tracking of groups that no longer exist.
func (t *Tracker) forget(groups []*fsm.Group) {
	t.mu.Lock()
	defer t.mu.Unlock()
	live := make(map[string]bool, len(groups))
	for _, g := range groups {
		live[g.Name] = true
	}
	maps.DeleteFunc(t.groups, func(name string, _ *groupTrack) bool { return !live[name] })
}

// UnownedKey is a key of a group that no lease holds.
type UnownedKey struct {
	Group, Key string
	// Target is the worker the plan targets the key at; "" when none.
	Target string
	// For is how long the key has been free, counted from the leader's
	// promotion at most.
	For time.Duration
	// Overdue: free for longer than the group's stuck grace.
	Overdue bool
}

// StuckWorker is a worker that the balancer marked stuck in a group.
type StuckWorker struct {
	Group, Worker string
	// For is how long it has been stuck (counted from the leader's
	// promotion at most); QuarantineLeft how much of its quarantine is
	// left (it stays stuck after that until it holds its targets).
	For, QuarantineLeft time.Duration
}

// Report returns the free keys and stuck workers of every tracked group,
// sorted, and the grace of each group.
func (t *Tracker) Report() (free []UnownedKey, stuck []StuckWorker, graces map[string]time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	graces = make(map[string]time.Duration, len(t.groups))
	for name, gt := range t.groups {
		graces[name] = gt.grace
		for k, since := range gt.free {
			free = append(free, UnownedKey{Group: name, Key: k, For: now.Sub(since)})
		}
		for id, wt := range gt.workers {
			if wt.stuck {
				stuck = append(stuck, StuckWorker{Group: name, Worker: id, For: now.Sub(wt.since), QuarantineLeft: max(wt.until.Sub(now), 0)})
			}
		}
	}
	sort.Slice(free, func(i, j int) bool {
		return free[i].Group < free[j].Group || free[i].Group == free[j].Group && free[i].Key < free[j].Key
	})
	sort.Slice(stuck, func(i, j int) bool {
		return stuck[i].Group < stuck[j].Group || stuck[i].Group == stuck[j].Group && stuck[i].Worker < stuck[j].Worker
	})
	return free, stuck, graces
}
