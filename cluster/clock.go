package cluster

import "github.com/tenure-io/tenure/cluster/internal/lessor"

// Clock is the time source of the lessor, the proposer's timers and the
// stuck tracker (Config.Clock). Deadlines compare readings of Now with
// time.Time.Sub, so the real clock's monotonic reading is what counts.
type Clock = lessor.Clock

// Timer is the part of *time.Timer that a Clock's timers offer.
type Timer = lessor.Timer

// SystemClock is the real monotonic clock.
type SystemClock = lessor.SystemClock
