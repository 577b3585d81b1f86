package clock

import "time"

// Clock is a time source. Deadlines compare readings of Now with
// time.Time.Sub, so the real clock's monotonic reading is what counts.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer that waiting for a deadline uses.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration)
}

// System is the real monotonic clock.
type System struct{}

// Now returns time.Now(), which carries a monotonic reading.
func (System) Now() time.Time { return time.Now() }

// NewTimer wraps time.NewTimer.
func (System) NewTimer(d time.Duration) Timer { return &sysTimer{time.NewTimer(d)} }

type sysTimer struct{ t *time.Timer }

func (s *sysTimer) C() <-chan time.Time   { return s.t.C }
func (s *sysTimer) Stop() bool            { return s.t.Stop() }
func (s *sysTimer) Reset(d time.Duration) { s.t.Reset(d) }
