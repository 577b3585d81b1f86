package limitedlog

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tenure-io/tenure/test/harness"
)

// summaryRecorder returns a summary function for New that adds each
// summary's count to a map by reason, the map, and the mutex that guards
// it.
func summaryRecorder() (*sync.Mutex, map[string]int, func(reason string, n int)) {
	mu := &sync.Mutex{}
	summaries := map[string]int{}
	return mu, summaries, func(reason string, n int) {
		mu.Lock()
		defer mu.Unlock()
		summaries[reason] += n
	}
}

// The limit is per reason: a flood of one reason leaves the lines of
// another alone; each interval logs its first lines, and its summary
// counts the rest, so that nothing is lost.
func TestLimiterLimitsEachReason(t *testing.T) {
	mu, summaries, record := summaryRecorder()
	lim := NewLimiter(3, time.Second, record)
	logged := map[string]int{}
	for range 50 {
		if lim.Allow("flood") {
			logged["flood"]++
		}
	}
	for range 2 {
		if lim.Allow("rare") {
			logged["rare"]++
		}
	}
	if logged["flood"] != 3 || logged["rare"] != 2 {
		t.Fatalf("logged %v in one interval, want flood 3 (the limit) and rare 2 (all)", logged)
	}
	harness.WaitFor(t, 5*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if summaries["flood"] != 47 || summaries["rare"] != 0 {
			return fmt.Errorf("summaries %v, want flood 47 and no summary of rare", summaries)
		}
		return nil
	})
	// A new interval logs its first lines again.
	if !lim.Allow("flood") {
		t.Error("the first refusal of a new interval was not logged")
	}
}

// Reasons taken from what a stranger sent cannot grow the limiter without
// bound: past MaxReasons, new reasons share one limit, Overflow's.
func TestLimiterBoundsItsReasons(t *testing.T) {
	_, _, record := summaryRecorder()
	lim := NewLimiter(1, time.Hour, record)
	logged := 0
	for i := range 10 * MaxReasons {
		if lim.Allow(fmt.Sprint("reason ", i)) {
			logged++
		}
	}
	if logged != MaxReasons+1 {
		t.Errorf("%d reasons logged %d lines, want %d (one for each of the first %d, one for %q)", 10*MaxReasons, logged, MaxReasons+1, MaxReasons, Overflow)
	}
	lim.mu.Lock()
	n := len(lim.reasons)
	lim.mu.Unlock()
	if n > MaxReasons+1 {
		t.Errorf("the limiter tracks %d reasons, want at most %d", n, MaxReasons+1)
	}
}
