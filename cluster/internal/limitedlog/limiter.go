package limitedlog

import (
	"sync"
	"time"
)

// Defaults of a limit: at most 10 lines per reason every 10 seconds, so a
// flood writes at most 11 lines (with the summary) per reason per 10
// seconds, whatever its rate.
const (
	DefaultLines    = 10
	DefaultInterval = 10 * time.Second
)

// MaxReasons bounds the reasons a Limiter tracks at once, so that reasons
// taken from text a stranger sent cannot grow its memory without limit:
// once it tracks that many, a new reason counts as Overflow until an
// interval ends with nothing of an old reason left out.
const MaxReasons = 64

// Overflow is the reason of the lines past MaxReasons.
const Overflow = "other"

// Limiter limits log lines: per reason, the first lines of each interval
// are allowed, the rest only counted, and once the interval ends summary is
// called (from a timer's goroutine, or from Allow) with the reason and how
// many were left out. Its methods are safe for concurrent use.
type Limiter struct {
	summary  func(reason string, suppressed int)
	lines    int
	interval time.Duration

	mu      sync.Mutex
	reasons map[string]*window
}

// window is one reason's current interval.
type window struct {
	start      time.Time
	logged     int
	suppressed int
	// timer calls the summary at the end of the interval, once a line was
	// left out in it.
	timer *time.Timer
}

// NewLimiter returns a Limiter of lines per reason every interval; summary
// must not call the Limiter.
func NewLimiter(lines int, interval time.Duration, summary func(reason string, suppressed int)) *Limiter {
	return &Limiter{summary: summary, lines: lines, interval: interval, reasons: map[string]*window{}}
}

// Allow reports whether a line for reason may be logged now; if not, it is
// counted for the interval's summary.
func (l *Limiter) Allow(reason string) bool {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.reasons[reason]
	if w == nil {
		if len(l.reasons) >= MaxReasons {
			l.forgetIdle(now)
		}
		if len(l.reasons) >= MaxReasons {
			reason = Overflow
			w = l.reasons[reason]
		}
		if w == nil {
			w = &window{start: now}
			l.reasons[reason] = w
		}
	}
	if now.Sub(w.start) >= l.interval {
		// A new interval: the last one's summary first, if its timer has
		// not called it yet.
		l.summarize(reason, w)
		w.start, w.logged = now, 0
	}
	if w.logged < l.lines {
		w.logged++
		return true
	}
	w.suppressed++
	if w.suppressed == 1 {
		start := w.start
		w.timer = time.AfterFunc(start.Add(l.interval).Sub(now), func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if w.start == start { // else Allow summarized this interval already
				l.summarize(reason, w)
			}
		})
	}
	return false
}

// forgetIdle drops the reasons whose interval ended with nothing left out
// (or whose summary is done). l.mu is held.
func (l *Limiter) forgetIdle(now time.Time) {
	for r, w := range l.reasons {
		if now.Sub(w.start) >= l.interval && w.suppressed == 0 {
			delete(l.reasons, r)
		}
	}
}

// summarize calls the summary with how many lines for reason w left out,
// if any, and starts its count again. l.mu is held.
func (l *Limiter) summarize(reason string, w *window) {
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if w.suppressed == 0 {
		return
	}
	l.summary(reason, w.suppressed)
	w.suppressed = 0
}
