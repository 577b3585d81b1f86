package client

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

// A stale read from a node that is behind or whose disk fails says so: the
// client shows the node's applied index, how far behind it is and why it
// is not ready, on an answer and on a 404 alike, so a caller can tell a
// missing key from a stale node.
func TestStaleReadShowsNodeNotReady(t *testing.T) {
	const why = "raft log or stable store write failed 1s ago (3 failed writes): no space left on device"
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set(HeaderIndex, "10")
		w.Header().Set(HeaderLastContact, "42000")
		w.Header().Set(HeaderAppliedIndex, "10")
		w.Header().Set(HeaderBehind, "5000")
		w.Header().Set(HeaderNotReady, why)
		if r.URL.Path == "/v1/leases/missing" {
			writeJSON(w, 404, map[string]any{"error": "not_found", "message": "no such key"})
			return
		}
		writeJSON(w, 200, testLease("k"))
	})
	c, _ := newTestClient(t, srv.URL)
	ctx := context.Background()

	_, meta, err := c.Leases().Get(ctx, "k", &QueryOptions{Stale: true})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if meta.AppliedIndex != 10 || meta.Behind != 5000 || meta.NotReady != why || meta.LastContact.Seconds() != 42 {
		t.Errorf("meta = %+v, want applied 10, 5000 behind, not ready %q, last contact 42s", meta, why)
	}
	_, _, err = c.Leases().Get(ctx, "missing", &QueryOptions{Stale: true})
	var ae *APIError
	if !errors.As(err, &ae) || ae.NotReady != why {
		t.Errorf("Get of a key the stale node lacks: %v, want an APIError with NotReady %q", err, why)
	}
}
