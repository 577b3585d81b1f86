package rounds

import (
	"sync"
	"testing"
	"time"

	"github.com/tenure-io/tenure/test/harness"
)

// A verification round answers only the callers that arrived before it
// started: a caller arriving during a round is answered by a round that
// starts after it, which may run alongside the first (rounds pipeline, up
// to maxRoundsInFlight; past that a caller waits for a place).
func TestVerifierCallerWaitsForARoundStartedAfterIt(t *testing.T) {
	var mu sync.Mutex
	rounds := 0
	started := make(chan int, 2*maxRoundsInFlight)
	release := map[int]chan struct{}{}
	for i := 1; i <= maxRoundsInFlight+1; i++ {
		release[i] = make(chan struct{})
	}
	v := NewVerifier(func() (uint64, error) {
		mu.Lock()
		rounds++
		r := rounds
		mu.Unlock()
		started <- r
		<-release[r]
		return uint64(r), nil
	}, nil)
	verify := func() chan uint64 {
		ch := make(chan uint64, 1)
		go func() {
			r, err := v.Verify(harness.Context(t, 5*time.Second))
			if err != nil {
				t.Error(err)
			}
			ch <- r
		}()
		return ch
	}
	callers := []chan uint64{verify()}
	if r := <-started; r != 1 {
		t.Fatalf("round %d started first", r)
	}
	// Each caller that arrives while the earlier rounds run starts a round
	// of its own at once, up to the bound.
	for i := 2; i <= maxRoundsInFlight; i++ {
		callers = append(callers, verify())
		if r := <-started; r != i {
			t.Fatalf("round %d started, want %d", r, i)
		}
	}
	last := verify()
	harness.WaitUntil(t, time.Second, "a caller to queue past the bound", func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		return len(v.waiting) == 1
	})
	select {
	case r := <-started:
		t.Fatalf("round %d started past the bound of %d", r, maxRoundsInFlight)
	default:
	}
	// Rounds end out of order; each caller gets the round it started.
	close(release[2])
	if got := <-callers[1]; got != 2 {
		t.Fatalf("second caller answered by round %d, want 2", got)
	}
	if r := <-started; r != maxRoundsInFlight+1 {
		t.Fatalf("round %d started for the queued caller, want %d", r, maxRoundsInFlight+1)
	}
	for i := 1; i <= maxRoundsInFlight+1; i++ {
		if i != 2 {
			close(release[i])
		}
	}
	for i, ch := range callers {
		if i == 1 {
			continue // read above
		}
		if got := <-ch; got != uint64(i+1) {
			t.Fatalf("caller %d answered by round %d", i+1, got)
		}
	}
	if got := <-last; got != maxRoundsInFlight+1 {
		t.Fatalf("queued caller answered by round %d, want %d", got, maxRoundsInFlight+1)
	}
}
