// Package clocktest is a manual Clock for the tests of the packages that
// read the node's clock.
package clocktest

import (
	"sync"
	"time"

	"github.com/tenure-io/tenure/cluster/internal/clock"
)

// Fake is a manual clock: it starts at time.Unix(1000, 0), and its timers
// fire when Advance passes them.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

// NewFake returns a Fake at time.Unix(1000, 0).
func NewFake() *Fake { return &Fake{now: time.Unix(1000, 0)} }

// Now is the clock's reading.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d and fires the timers that are due.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.timers {
		if t.armed && !c.now.Before(t.at) {
			t.armed = false
			select {
			case t.ch <- c.now:
			default:
			}
		}
	}
}

// Timers is the number of armed timers.
func (c *Fake) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if t.armed {
			n++
		}
	}
	return n
}

// NewTimer returns a timer that fires when Advance reaches now+d.
func (c *Fake) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1), at: c.now.Add(d), armed: true}
	c.timers = append(c.timers, t)
	return t
}

type fakeTimer struct {
	c     *Fake
	ch    chan time.Time
	at    time.Time
	armed bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.armed
	t.armed = false
	return was
}

func (t *fakeTimer) Reset(d time.Duration) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.at, t.armed = t.c.now.Add(d), true
}
