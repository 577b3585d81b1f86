package placement

import (
	"math"
	"sync"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster/internal/clock"
)

// Loads keeps the loads that renewals report, as decayed averages: one
// per key (whoever holds it: a key's load is the key's, so it survives a
// move) and one per worker (its total). Only the leader receives renewals,
// so only the leader's Loads fills; a new leader starts empty and learns
// within one renewal interval. Safe for concurrent use.
//
// The average of a series of reports x₁, x₂, … at times t₁, t₂, … moves
// toward each new report by 1 − 2^(−Δt/halfLife): a load that holds steady
// for one half-life is half-way in, whatever the renewal interval. The
// first report of a key is its average.
//
// Entries not reported for forgetAfter are dropped (Sweep, at every pass of
// the balancer), so the maps hold the keys and workers that reported a
// load with a renewal within it: at most the leases renewed in ten
// half-lives.
type Loads struct {
	clock       clock.Clock
	halfLife    time.Duration
	forgetAfter time.Duration

	mu      sync.Mutex
	keys    map[string]*average
	workers map[string]*average
}

// KeyLoad is one key's load as its holder reported it.
type KeyLoad struct {
	Key  string
	Load float64
}

type average struct {
	value float64
	at    time.Time // the last report
}

// NewLoads returns an empty Loads that averages over halfLife and forgets
// what was not reported for ten half-lives.
func NewLoads(c clock.Clock, halfLife time.Duration) *Loads {
	return &Loads{clock: c, halfLife: halfLife, forgetAfter: 10 * halfLife,
		keys: make(map[string]*average), workers: make(map[string]*average)}
}

// Report records what one renewal of holder reported: the loads of the
// keys it renewed (only those renewed: a holder reports nothing for a key
// it does not hold) and, when total is not nil, its total. The worker is
// holder's id (holder up to its last '#', as a worker's holders are).
func (l *Loads) Report(holder string, keys []KeyLoad, total *float64) {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		l.keys[k.Key] = l.update(l.keys[k.Key], k.Load, now)
	}
	if total != nil {
		id := wire.WorkerOf(holder)
		l.workers[id] = l.update(l.workers[id], *total, now)
	}
}

// update moves a toward x, or starts it at x. l.mu is held.
func (l *Loads) update(a *average, x float64, now time.Time) *average {
	if a == nil {
		return &average{value: x, at: now}
	}
	dt := now.Sub(a.at)
	if dt > 0 {
		a.value += (x - a.value) * (1 - math.Exp2(-float64(dt)/float64(l.halfLife)))
		a.at = now
	}
	return a
}

// Key returns the average load of key, and false when no report of it is
// kept.
func (l *Loads) Key(key string) (float64, bool) { return l.value(l.keys, key) }

// Worker returns the average total load of the worker id, and false when
// it reported none.
func (l *Loads) Worker(id string) (float64, bool) { return l.value(l.workers, id) }

func (l *Loads) value(m map[string]*average, name string) (float64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := m[name]; a != nil {
		return a.value, true
	}
	return 0, false
}

// Sweep drops the entries not reported for ten half-lives.
func (l *Loads) Sweep() {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range []map[string]*average{l.keys, l.workers} {
		for k, a := range m {
			if now.Sub(a.at) > l.forgetAfter {
				delete(m, k)
			}
		}
	}
}
