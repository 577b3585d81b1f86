package httpapi

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/client/wire"
)

// admission bounds the API requests a server works on at once (those
// it serves as leader, and stale reads). A request past the bound waits, first come first served, for at most
// maxWait; one that would wait longer, or find maxQueue others waiting,
// is answered 429 overloaded with Retry-After.
//
// Why: every request that finishes a commit or a leadership round wakes
// at once with all the others of that round. With a thousand clients,
// that is a thousand goroutines ready to run on two cores, and Raft's
// answers to the leader's heartbeats queue behind them: past the leader
// lease timeout (100 ms by default) the leader steps down for want of a
// quorum it in fact has, and every request fails until the next leader is
// elected. A request that waits here is parked, not ready to run, so the
// heartbeats keep their place, and overload shows as 429s and a longer
// wait instead of elections.
type admission struct {
	slots    chan struct{}
	waiting  atomic.Int64
	maxQueue int64
	maxWait  time.Duration
	// refused counts the requests answered 429 here.
	refused atomic.Uint64
}

func newAdmission(active, queue int, wait time.Duration) *admission {
	return &admission{slots: make(chan struct{}, active), maxQueue: int64(queue), maxWait: wait}
}

// errAdmission is the answer to a request refused for overload.
var errAdmission = &apiError{code: wire.CodeOverloaded, msg: "this server is working on as many requests as -http-max-active allows and none finished within -http-max-queue-wait; retry after the Retry-After delay"}

// enter takes a slot for one request, waiting up to maxWait for one. The
// slot is given back by calling leave, once; leave is safe to call again.
func (a *admission) enter(ctx context.Context) (leave func(), err error) {
	select {
	case a.slots <- struct{}{}:
		return a.leaver(), nil
	default:
	}
	if a.waiting.Add(1) > a.maxQueue {
		a.waiting.Add(-1)
		a.refused.Add(1)
		return nil, errAdmission
	}
	defer a.waiting.Add(-1)
	t := time.NewTimer(a.maxWait)
	defer t.Stop()
	select {
	case a.slots <- struct{}{}:
		return a.leaver(), nil
	case <-t.C:
		a.refused.Add(1)
		return nil, errAdmission
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (a *admission) leaver() func() {
	return sync.OnceFunc(func() { <-a.slots })
}

// register adds the admission's metrics to reg.
func (a *admission) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tenure_http_requests_active",
			Help: "API requests this server works on now (at most -http-max-active).",
		}, func() float64 { return float64(len(a.slots)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tenure_http_requests_queued",
			Help: "API requests waiting for one of the -http-max-active places.",
		}, func() float64 { return float64(a.waiting.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tenure_http_requests_refused_total",
			Help: "API requests answered 429 overloaded because none of the -http-max-active places came free within -http-max-queue-wait.",
		}, func() float64 { return float64(a.refused.Load()) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

type admissionKey struct{}

// admitted serves r through h once it holds a slot of s's admission, and
// gives the slot back when h returns. A blocking read (a query with index
// or hash) is served at once: it waits, not works, and a handler that
// turns out to wait (a blocking acquire) gives its slot back early with
// leaveAdmission.
func (s *Server) admitted(w http.ResponseWriter, r *http.Request, h http.Handler) {
	if s.admission == nil || blockingQuery(r) {
		h.ServeHTTP(w, r)
		return
	}
	leave, err := s.admission.enter(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	defer leave()
	h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), admissionKey{}, leave)))
}

// leaveAdmission gives back the admission slot of r, if it holds one.
func leaveAdmission(r *http.Request) {
	if leave, ok := r.Context().Value(admissionKey{}).(func()); ok {
		leave()
	}
}

// blockingQuery says whether r is a blocking read.
func blockingQuery(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	q := r.URL.Query()
	return q.Has("index") || q.Has("hash")
}
