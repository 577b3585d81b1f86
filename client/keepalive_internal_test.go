package client

import (
	"testing"
	"time"
)

// deadlinePassed: at or after the deadline counts as passed, on readings
// with and without a monotonic part. (A monotonic clock that lags the wall
// clock, as after a suspend, cannot be made in a test: time.Time's
// monotonic reading cannot be set.)
func TestDeadlinePassed(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name     string
		now      time.Time
		deadline time.Time
		want     bool
	}{
		{"before on both", now, now.Add(time.Second), false},
		{"at the deadline", now, now, true},
		{"after on both", now.Add(time.Second), now, true},
		{"wall readings, after", now.Round(0).Add(time.Minute), now.Round(0), true},
		{"wall readings, before", now.Round(0), now.Round(0).Add(time.Minute), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := deadlinePassed(tt.now, tt.deadline); got != tt.want {
				t.Fatalf("deadlinePassed = %v, want %v", got, tt.want)
			}
		})
	}
}

// isRunning reports whether the renewer goroutine runs.
func (k *keeper) isRunning() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.running
}
