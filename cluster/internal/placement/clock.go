package placement

import "time"

// Clock is the time source of the balancer and the stuck tracker: the
// node's injected clock. Durations compare readings of Now with
// time.Time.Sub, so the real clock's monotonic reading is what counts.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer that the balancer uses.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration)
}
