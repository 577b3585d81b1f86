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
