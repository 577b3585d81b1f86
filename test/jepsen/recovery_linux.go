package jepsen

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tenure-io/tenure/test/jepsen/history"

	"github.com/tenure-io/tenure/client"
)

// recoveryBound is how soon after the last fault is undone every workload
// must succeed again: ten election timeouts for the cluster to elect and
// establish a leader, plus two TTLs for leases held across the fault to
// expire and be taken over, plus the balancer's settle time and what the
// servers need to see the placement workers again after every server
// restarted (the workers' 2s rejoin check, or, when they never noticed
// the restart, their 5s full gossip state exchange).
const recoveryBound = 10*electionTimeout + 2*holderTTL + balanceSettle + workerRejoin + workerPushPull

// How long placement workers may take to be seen by restarted servers.
const (
	workerRejoin   = 2 * time.Second
	workerPushPull = 5 * time.Second
)

// recoveryProbe reports the CLOCK_MONOTONIC time at which a workload first
// succeeded after healedAt, or 0 when it did not within limit.
type recoveryProbe struct {
	workload string
	firstOK  func(ctx context.Context) int64
}

// probes returns one probe per workload of the run: an acquisition through
// the API for every run, and the workers' own progress for the others.
func (w *world) probes(healedAt int64) []recoveryProbe {
	out := []recoveryProbe{{workload: "acquire", firstOK: func(ctx context.Context) int64 {
		for i := 0; ; i++ {
			s := w.servers[i%len(w.servers)]
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := w.call(cctx, "PUT", w.url(s, fmt.Sprintf("/v1/leases/recovery-%d", i)), map[string]any{"holder": "recovery", "ttl": "1s"}, nil)
			cancel()
			if err == nil {
				return history.Now()
			}
			if !sleep(ctx, 50*time.Millisecond) {
				return 0
			}
		}
	}}}
	progress := func(role, kind string, accepted bool) func(ctx context.Context) int64 {
		return func(ctx context.Context) int64 {
			for {
				for _, p := range w.all() {
					if p.role != role {
						continue
					}
					evs, _ := history.ReadFile(p.history)
					for _, e := range evs {
						if e.T > healedAt && e.Kind == kind && (!accepted || e.Accepted) {
							return e.T
						}
					}
				}
				if !sleep(ctx, 200*time.Millisecond) {
					return 0
				}
			}
		}
	}
	if w.has("mutex") {
		out = append(out, recoveryProbe{workload: "mutex (accepted store write)", firstOK: progress("store", history.StoreWrite, true)})
	}
	if w.has("elect") {
		out = append(out, recoveryProbe{workload: "election (a leader acts)", firstOK: progress("elect", history.Belief, false)})
	}
	if w.has("place") {
		out = append(out, recoveryProbe{workload: "placement (every key held by a live worker)", firstOK: func(ctx context.Context) int64 {
			for {
				if v, err := w.groupView(ctx); err == nil && v.settled() {
					return history.Now()
				}
				if !sleep(ctx, 200*time.Millisecond) {
					return 0
				}
			}
		}})
	}
	return out
}

// groupView is GET /v1/groups/{name}, with what the suite asks of it.
type groupView client.Group

func (w *world) groupView(ctx context.Context) (groupView, error) {
	var v groupView
	var last error
	for _, s := range w.servers {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := w.call(cctx, "GET", w.url(s, "/v1/groups/"+placeGroup), nil, &v)
		cancel()
		if err == nil {
			return v, nil
		}
		last = err
	}
	return v, last
}

// holderWorker is the worker id of a placement lease holder ("id#suffix").
func holderWorker(holder string) string { return strings.SplitN(holder, "#", 2)[0] }

// settled: every key held, by a live worker, and that worker is its
// target; no key is being prepared for a move.
func (v groupView) settled() bool {
	alive := map[string]bool{}
	for _, w := range v.Workers {
		alive[w.ID] = w.Status == "alive"
	}
	if len(v.Keys) == 0 {
		return false
	}
	for _, k := range v.Keys {
		if k.State != "held" || !alive[holderWorker(k.Holder)] || holderWorker(k.Holder) != k.Target || k.Preparing != "" {
			return false
		}
	}
	return true
}
