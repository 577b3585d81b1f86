package rounds

import (
	"context"
	"sync"
	"time"
)

// maxRoundsInFlight bounds the leadership rounds that overlap: a caller
// that arrives while a round runs starts the next one at once, unless this
// many are running; then it waits for a free place. Two rather than four:
// fewer, larger rounds took less of the leader's CPU per renewal and read
// at 64 clients (renewals +3% and +13%, linearizable reads +8% and +13%,
// p50 lower, in two alternating runs of `benchcompare -tenure-only
// -only "64 clients"`); one caller at a time never has more than one.
const maxRoundsInFlight = 2

// Verifier batches leadership checks: one round (verify, the hub's call of
// Confirmer.CheckLeadership) answers every caller that arrived before the
// round started. A caller that arrives while rounds are running waits for a
// round that starts after it, so the answer it gets always comes from a
// round that began after it asked. That is what makes a renewal or a read
// safe: no newer leader can have acted before it.
type Verifier struct {
	// verify runs one round; it returns the commit index read at its start.
	verify  func() (uint64, error)
	observe func(time.Duration)

	mu       sync.Mutex
	waiting  []chan roundResult
	inFlight int
}

type roundResult struct {
	commit uint64
	err    error
}

// NewVerifier returns a verifier whose rounds run verify; observe, if not
// nil, gets each round's duration.
func NewVerifier(verify func() (uint64, error), observe func(time.Duration)) *Verifier {
	return &Verifier{verify: verify, observe: observe}
}

// Verify blocks until a round that started after the call confirms
// leadership (and returns the commit index read at that round's start) or
// denies it, or ctx ends.
func (v *Verifier) Verify(ctx context.Context) (uint64, error) {
	ch := make(chan roundResult, 1)
	v.mu.Lock()
	v.waiting = append(v.waiting, ch)
	v.startLocked()
	v.mu.Unlock()
	select {
	case r := <-ch:
		return r.commit, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// InFlight is the number of rounds running.
func (v *Verifier) InFlight() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.inFlight
}

// startLocked starts a round for everyone waiting, if there is a place.
func (v *Verifier) startLocked() {
	if len(v.waiting) == 0 || v.inFlight >= maxRoundsInFlight {
		return
	}
	batch := v.waiting
	v.waiting = nil
	v.inFlight++
	go v.round(batch)
}

// round runs one round for batch, whose callers all arrived before it
// started, then starts the next if anyone waits.
func (v *Verifier) round(batch []chan roundResult) {
	start := time.Now()
	commit, err := v.verify()
	if v.observe != nil {
		v.observe(time.Since(start))
	}
	for _, ch := range batch {
		ch <- roundResult{commit: commit, err: err}
	}
	v.mu.Lock()
	v.inFlight--
	v.startLocked()
	v.mu.Unlock()
}
