package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkRequestMetrics measures what the request metrics add to each
// request, renewals included: a router with a renew route that answers
// 200 at once, bare and instrumented. The difference between the two is
// the middleware's cost per request (README, Performance).
func BenchmarkRequestMetrics(b *testing.B) {
	newRouter := func() *mux.Router {
		r := mux.NewRouter()
		r.Handle("/v1/renew/{key:.+}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
		})).Methods(http.MethodPost)
		return r
	}
	run := func(b *testing.B, h http.Handler) {
		req := httptest.NewRequest(http.MethodPost, "/v1/renew/jobs/7", nil)
		w := httptest.NewRecorder()
		b.ReportAllocs()
		for b.Loop() {
			h.ServeHTTP(w, req)
		}
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
	b.Run("bare", func(b *testing.B) { run(b, newRouter()) })
	b.Run("instrumented", func(b *testing.B) {
		m, err := newRequestMetrics(prometheus.NewRegistry())
		if err != nil {
			b.Fatal(err)
		}
		r := newRouter()
		run(b, m.instrument(r, r))
	})
}
