package placement

import "github.com/tenure-io/tenure/cluster/internal/clock"

// Clock is the time source of the balancer and the stuck tracker: the
// node's injected clock. Durations compare readings of Now with
// time.Time.Sub, so the real clock's monotonic reading is what counts.
type Clock = clock.Clock

// Timer is the part of *time.Timer that the balancer uses.
type Timer = clock.Timer
