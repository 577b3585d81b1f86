package placement

import "github.com/tenure-io/tenure/cluster/internal/clock/clocktest"

// fakeClock is a manual clock that tests move by hand.
type fakeClock = clocktest.Fake

func newFakeClock() *fakeClock { return clocktest.NewFake() }
