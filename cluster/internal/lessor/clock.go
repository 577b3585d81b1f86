package lessor

import "github.com/tenure-io/tenure/cluster/internal/clock"

// Clock is the lessor's time source. Deadlines compare readings of Now with
// time.Time.Sub, so the real clock's monotonic reading is what counts. The
// lessor reads only Now; NewTimer is for whoever waits for its deadlines
// (the hub's proposer), so that both run on the same clock.
type Clock = clock.Clock

// Timer is the part of *time.Timer that waiting for a deadline uses.
type Timer = clock.Timer

// SystemClock is the real monotonic clock.
type SystemClock = clock.System
