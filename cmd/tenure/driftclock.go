package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenure-io/tenure/cluster"
)

// driftClock runs at rate × the real monotonic clock, piecewise linear
// across rate changes, so it never jumps and never goes backwards. Only
// builds with the tag tenure_clockdrift use it (clock_drift.go); in a
// release it is unreachable.
type driftClock struct {
	mu       sync.Mutex
	realBase time.Time // a real reading (with its monotonic part)
	fakeBase time.Time // this clock's reading at realBase
	rate     float64
}

func newDriftClock() *driftClock {
	now := time.Now()
	return &driftClock{realBase: now, fakeBase: now, rate: 1}
}

// load sets the rate from the file at path: a decimal in (0, 10]; a
// missing or empty file means 1.
func (c *driftClock) load(path string) error {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		b, err = nil, nil
	}
	if err != nil {
		return err
	}
	rate := 1.0
	if s := strings.TrimSpace(string(b)); s != "" {
		if rate, err = strconv.ParseFloat(s, 64); err != nil || rate <= 0 || rate > 10 {
			return fmt.Errorf("rate %q: want a number in (0, 10]", s)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if rate != c.rate {
		r := time.Now()
		c.fakeBase, c.realBase, c.rate = c.nowLocked(r), r, rate
	}
	return nil
}

func (c *driftClock) nowLocked(r time.Time) time.Time {
	return c.fakeBase.Add(time.Duration(float64(r.Sub(c.realBase)) * c.rate))
}

// Now returns the drifted reading; Add keeps the monotonic part, so Sub
// between two readings is the drifted duration.
func (c *driftClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked(time.Now())
}

// NewTimer fires after d of this clock's time at the rate of the moment it
// is set; the lessor re-reads Now when a timer fires.
func (c *driftClock) NewTimer(d time.Duration) cluster.Timer {
	return &driftTimer{c: c, t: time.NewTimer(c.real(d))}
}

func (c *driftClock) real(d time.Duration) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Duration(float64(d) / c.rate)
}

type driftTimer struct {
	c *driftClock
	t *time.Timer
}

func (t *driftTimer) C() <-chan time.Time   { return t.t.C }
func (t *driftTimer) Stop() bool            { return t.t.Stop() }
func (t *driftTimer) Reset(d time.Duration) { t.t.Reset(t.c.real(d)) }
