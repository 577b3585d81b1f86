package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
)

// unmatchedRoute is the route label of requests that no route matched
// (404, 405): their paths would make the label unbounded.
const unmatchedRoute = "unmatched"

// requestMetrics count the API's requests by route template, method and
// status. Label values are bounded: routes are the router's templates,
// methods the standard ones (anything else is "other"), codes those the
// server answers with.
type requestMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newRequestMetrics(reg prometheus.Registerer) (*requestMetrics, error) {
	m := &requestMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenure_http_requests_total",
			Help: "HTTP API requests answered by this server, by route template, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tenure_http_request_duration_seconds",
			Help:    "Time to answer an HTTP API request, by route template and method (blocking requests include their wait).",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route", "method"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// instrument counts every request h answers under the route template that
// router matched for it. A middleware of the router records the template
// of the route that served the request in the request's recorder (h hands
// the writer to the router as it is), which costs no second match and no
// copy of the request; a request the router did not serve (no route, a
// refused query) is matched again to find its template, or counted as
// unmatched.
func (m *requestMetrics) instrument(router *mux.Router, h http.Handler) http.Handler {
	router.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rec, ok := w.(*routeRecorder); ok {
				if cur := mux.CurrentRoute(r); cur != nil {
					if t, err := cur.GetPathTemplate(); err == nil {
						rec.route = t
					}
				}
			}
			next.ServeHTTP(w, r)
		})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &routeRecorder{statusRecorder: statusRecorder{ResponseWriter: w}}
		start := time.Now()
		h.ServeHTTP(rec, r)
		elapsed := time.Since(start)
		route := rec.route
		if route == "" {
			route = unmatchedRoute
			var match mux.RouteMatch
			if router.Match(r, &match) && match.Route != nil {
				if t, err := match.Route.GetPathTemplate(); err == nil {
					route = t
				}
			}
		}
		m.observe(route, r.Method, rec.status, elapsed)
	})
}

// observe counts one request of route (a template) and method, answered
// with status (0 is 200) after elapsed.
func (m *requestMetrics) observe(route, method string, status int, elapsed time.Duration) {
	if status == 0 {
		status = http.StatusOK
	}
	method = methodLabel(method)
	m.duration.WithLabelValues(route, method).Observe(elapsed.Seconds())
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
}

// routeRecorder records a request's status and, from the router's
// middleware, the template of the route that served it.
type routeRecorder struct {
	statusRecorder
	route string
}

// methodLabel bounds the method label to the standard methods.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "other"
}

// Unwrap lets http.ResponseController reach the connection's writer
// (read and write deadlines of a restore) through a statusRecorder.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
