package integration

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/worker"
)

// handlerRun is one run of a handler for a key: from the moment the
// handler was called to the moment it returned, on the test's monotonic
// clock (durations since the log's origin).
type handlerRun struct {
	worker     string
	token      uint64
	start, end time.Duration
	running    bool
	stopping   bool // its context ended; it has not returned yet
}

// runLog records every handler run of every key of the in-process workers
// of a test. Its handlers hold the key until their context ends.
type runLog struct {
	origin time.Time

	mu   sync.Mutex
	runs map[string][]*handlerRun // by key, in the order they started
	// prepares are the prepares (worker.WithPrepare) that succeeded, by
	// key, in the order they ended.
	prepares map[string][]prepareRun
}

// prepareRun is one successful prepare of a key by a worker.
type prepareRun struct {
	worker     string
	start, end time.Duration
}

func newRunLog() *runLog {
	return &runLog{origin: time.Now(), runs: make(map[string][]*handlerRun), prepares: make(map[string][]prepareRun)}
}

// preparer returns the prepare function of worker (worker.WithPrepare): it
// takes d, or fails when ctx ends first, and records each success.
func (l *runLog) preparer(worker string, d time.Duration) func(ctx context.Context, key string) error {
	return func(ctx context.Context, key string) error {
		start := l.now()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
		l.mu.Lock()
		l.prepares[key] = append(l.prepares[key], prepareRun{worker: worker, start: start, end: l.now()})
		l.mu.Unlock()
		return nil
	}
}

// checkWarm checks every hand-over of a key from one worker to another
// whose handler started at or after from: the new worker prepared the key
// while the old one's handler still worked (the prepare ended before the
// old handler returned, and after it started), and its handler started
// within maxGap of the old one's return. It returns the number of
// hand-overs and the longest gap.
func (l *runLog) checkWarm(t *testing.T, from, maxGap time.Duration) (int, time.Duration) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	n, worst := 0, time.Duration(0)
	for key, runs := range l.runs {
		for i := 1; i < len(runs); i++ {
			prev, cur := runs[i-1], runs[i]
			if cur.start < from || cur.worker == prev.worker {
				continue
			}
			n++
			warm := slices.ContainsFunc(l.prepares[key], func(p prepareRun) bool {
				return p.worker == cur.worker && p.end >= prev.start && p.end <= prev.end
			})
			if !warm {
				t.Errorf("%s: %s took it over from %s unprepared (prepares %+v; %s ran %v-%v)",
					key, cur.worker, prev.worker, l.prepares[key], prev.worker, prev.start, prev.end)
			}
			gap := cur.start - prev.end
			worst = max(worst, gap)
			if gap > maxGap {
				t.Errorf("%s: %s's handler started %v after %s's returned, want at most %v", key, cur.worker, gap, prev.worker, maxGap)
			}
		}
	}
	return n, worst
}

// now is the time since the log's origin: monotonic, shared by every worker
// of the test.
func (l *runLog) now() time.Duration { return time.Since(l.origin) }

// handler returns the handler of worker: it records its start, works until
// ctx ends, finishes its work for linger more, and records its return.
func (l *runLog) handler(worker string, linger time.Duration) worker.Handler {
	return func(ctx context.Context, key string, token uint64) {
		l.mu.Lock()
		r := &handlerRun{worker: worker, token: token, start: l.now(), running: true}
		l.runs[key] = append(l.runs[key], r)
		l.mu.Unlock()

		<-ctx.Done()
		if linger > 0 {
			l.mu.Lock()
			r.stopping = true
			l.mu.Unlock()
			<-time.After(linger) // the last of the work, e.g. a flush
		}

		l.mu.Lock()
		r.end, r.running, r.stopping = l.now(), false, false
		l.mu.Unlock()
	}
}

// running returns the runs of key that have not returned yet.
func (l *runLog) running(key string) []handlerRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []handlerRun
	for _, r := range l.runs[key] {
		if r.running {
			out = append(out, *r)
		}
	}
	return out
}

// working returns the runs of key whose context has not ended: the
// handlers that own the key.
func (l *runLog) working(key string) []handlerRun {
	var out []handlerRun
	for _, r := range l.running(key) {
		if !r.stopping {
			out = append(out, r)
		}
	}
	return out
}

// runningOf returns the keys whose handler runs now on worker.
func (l *runLog) runningOf(worker string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for key, runs := range l.runs {
		for _, r := range runs {
			if r.running && r.worker == worker {
				out = append(out, key)
			}
		}
	}
	sort.Strings(out)
	return out
}

// history returns a copy of the runs of key, in the order they started.
func (l *runLog) history(key string) []handlerRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]handlerRun, len(l.runs[key]))
	for i, r := range l.runs[key] {
		out[i] = *r
	}
	return out
}

// startedSince returns, by key, the runs that started at or after from.
func (l *runLog) startedSince(from time.Duration) map[string][]handlerRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]handlerRun{}
	for key, runs := range l.runs {
		for _, r := range runs {
			if r.start >= from {
				out[key] = append(out[key], *r)
			}
		}
	}
	return out
}

// mostUnownedAtOnce is the most keys that had no handler running at the
// same moment from from on: a key is unowned from the return of one
// handler to the start of the next (to now when none started since).
func (l *runLog) mostUnownedAtOnce(from time.Duration) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	type edge struct {
		at    time.Duration
		delta int
	}
	var edges []edge
	now := l.now()
	for _, runs := range l.runs {
		for i, r := range runs {
			if r.running {
				continue
			}
			end := now
			if i+1 < len(runs) {
				end = runs[i+1].start
			}
			if end > from {
				edges = append(edges, edge{max(r.end, from), 1}, edge{end, -1})
			}
		}
	}
	// At one instant, a gap that ends goes before one that starts.
	sort.Slice(edges, func(i, j int) bool {
		return edges[i].at < edges[j].at || edges[i].at == edges[j].at && edges[i].delta < edges[j].delta
	})
	most, n := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}

// checkExclusive reports every key on which a handler started before the
// previous one returned, and every hand-over to another worker whose
// token did not grow.
func (l *runLog) checkExclusive(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	keys, hand := 0, 0
	for key, runs := range l.runs {
		keys++
		for i := 1; i < len(runs); i++ {
			prev, cur := runs[i-1], runs[i]
			if prev.running || cur.start < prev.end {
				end := "still running"
				if !prev.running {
					end = fmt.Sprintf("returned at %v", prev.end)
				}
				t.Errorf("%s: %s's handler started at %v while %s's (token %d) had not returned (%s)",
					key, cur.worker, cur.start, prev.worker, prev.token, end)
			}
			if cur.worker != prev.worker {
				hand++
				if cur.token <= prev.token {
					t.Errorf("%s: %s got token %d after %s had token %d: fencing tokens must grow",
						key, cur.worker, cur.token, prev.worker, prev.token)
				}
			}
		}
	}
	t.Logf("exclusive: %d keys, %d hand-overs between workers, no overlap seen", keys, hand)
}
