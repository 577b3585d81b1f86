package harness

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Send delivers the body as JSON with the extra headers, and returns any
// status with the whole answer.
func TestSend(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Got", r.Method+" "+r.Header.Get("Content-Type")+" "+r.Header.Get("X-Test")+" "+string(b))
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, "answer")
	}))
	t.Cleanup(srv.Close)
	r, err := Send(srv.Client(), http.MethodPut, srv.URL, `{"a":1}`, http.Header{"X-Test": {"yes"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != http.StatusConflict || string(r.Body) != "answer" || r.Header.Get("X-Got") != `PUT application/json yes {"a":1}` {
		t.Errorf("got %d %q with X-Got %q", r.Status, r.Body, r.Header.Get("X-Got"))
	}
}

// WithLeaseSecret adds the secret to the lease calls that name none, and
// leaves every other request as it is.
func TestWithLeaseSecret(t *testing.T) {
	for _, tt := range []struct {
		name, method, url, body string
		wantURL, wantBody       string
	}{
		{"acquire", "PUT", "http://a/v1/leases/k", `{"holder":"h"}`, "http://a/v1/leases/k", `{"secret":"s","holder":"h"}`},
		{"empty body", "POST", "/v1/renew/k", "{}", "/v1/renew/k", `{"secret":"s"}`},
		{"release in the query", "DELETE", "/v1/leases/k?holder=h&token=1", "", "/v1/leases/k?holder=h&token=1&secret=s", ""},
		{"a secret of its own", "PUT", "/v1/leases/k", `{"secret":"x"}`, "/v1/leases/k", `{"secret":"x"}`},
		{"not a lease call", "GET", "/v1/leases/k", "", "/v1/leases/k", ""},
	} {
		url, body := WithLeaseSecret("s", tt.method, tt.url, tt.body)
		if url != tt.wantURL || body != tt.wantBody {
			t.Errorf("%s: %q, %q; want %q, %q", tt.name, url, body, tt.wantURL, tt.wantBody)
		}
	}
}
