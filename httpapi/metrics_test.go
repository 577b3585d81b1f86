package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// Requests are counted by route template, method and status; a path that
// no route matches counts as "unmatched", never under its own path.
func TestRequestMetrics(t *testing.T) {
	n := startNode(t)
	do(t, http.MethodPut, n.url+"/v1/leases/jobs/a", `{"holder":"w1","ttl":"30s"}`).wantStatus(t, "acquire", http.StatusCreated)
	do(t, http.MethodPut, n.url+"/v1/leases/jobs/b", `{"holder":"w1","ttl":"30s"}`).wantStatus(t, "acquire", http.StatusCreated)
	do(t, http.MethodPut, n.url+"/v1/leases/jobs/a", `{"holder":"w2","ttl":"30s"}`).wantStatus(t, "conflicting acquire", http.StatusConflict)
	do(t, http.MethodGet, n.url+"/no/such/route/42", "").wantStatus(t, "unknown route", http.StatusNotFound)
	do(t, http.MethodGet, n.url+"/v1/leases/jobs/a?a;b=1", "").wantStatus(t, "a semicolon in the query", http.StatusBadRequest)
	body := string(do(t, http.MethodGet, n.url+"/metrics", "").body)
	for _, tt := range []struct{ name, want string }{
		{"grants", `tenure_http_requests_total{code="201",method="PUT",route="/v1/leases/{key:.+}"} 2`},
		{"conflict", `tenure_http_requests_total{code="409",method="PUT",route="/v1/leases/{key:.+}"} 1`},
		{"unmatched", `tenure_http_requests_total{code="404",method="GET",route="unmatched"} 1`},
		{"refused query (checked before routing)", `tenure_http_requests_total{code="400",method="GET",route="/v1/leases/{key:.+}"} 1`},
		{"duration", `tenure_http_request_duration_seconds_count{method="PUT",route="/v1/leases/{key:.+}"} 3`},
	} {
		if !strings.Contains(body, tt.want) {
			t.Errorf("%s: /metrics has no line %q", tt.name, tt.want)
		}
	}
	if strings.Contains(body, "/no/such") || strings.Contains(body, "jobs/a") {
		t.Errorf("a request's path is in a label:\n%s", grepLines(body, "tenure_http_"))
	}
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
