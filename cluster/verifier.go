package cluster

import (
	"context"
	"sync"
	"time"
)

// verifier batches leadership checks: one round (a committed barrier, see
// Node.confirmLeadership) answers every caller that arrived before the
// round started. A caller that arrives while a round is running waits for
// the next one, so the answer it gets always comes from a round that began
// after it asked. That is what makes a renewal or a read safe: no newer
// leader can have acted before it.
type verifier struct {
	verify  func() error
	observe func(time.Duration)

	mu      sync.Mutex
	waiting []chan error
	running bool
}

func newVerifier(verify func() error, observe func(time.Duration)) *verifier {
	return &verifier{verify: verify, observe: observe}
}

// Verify blocks until a round that started after the call confirms (nil) or
// denies leadership, or ctx ends.
func (v *verifier) Verify(ctx context.Context) error {
	ch := make(chan error, 1)
	v.mu.Lock()
	v.waiting = append(v.waiting, ch)
	if !v.running {
		v.running = true
		go v.rounds()
	}
	v.mu.Unlock()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// rounds runs rounds while anyone waits; it ends when the queue is empty.
func (v *verifier) rounds() {
	for {
		v.mu.Lock()
		batch := v.waiting
		v.waiting = nil
		if len(batch) == 0 {
			v.running = false
			v.mu.Unlock()
			return
		}
		v.mu.Unlock()
		start := time.Now()
		err := v.verify()
		if v.observe != nil {
			v.observe(time.Since(start))
		}
		for _, ch := range batch {
			ch <- err
		}
	}
}
