package client

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

func ev(index uint64, typ, key string) map[string]any {
	return map[string]any{"index": index, "term": 2, "type": typ, "key": key, "holder": "h", "token": index}
}

// TestWatchResumesWithoutRepeats: a watch resumes after failures from the
// last index it delivered, drops what it has delivered already, and ends
// with ErrCompacted when the server says so.
func TestWatchResumesWithoutRepeats(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		q := r.URL.Query()
		if q.Get("prefix") != "jobs/" || q.Get("type") != "acquired,released" || q.Get("wait") != "2s" {
			writeError(w, 400, wire.CodeInvalidQuery, "bad query "+r.URL.RawQuery)
			return
		}
		switch n {
		case 1: // index=10
			writeJSON(w, 200, map[string]any{"events": []any{ev(11, "acquired", "jobs/a"), ev(12, "released", "jobs/a")}, "index": 12})
		case 2: // the server fails: retried
			writeError(w, 503, wire.CodeNoLeader, "no leader")
		case 3: // a server behind, repeating 12: dropped
			writeJSON(w, 200, map[string]any{"events": []any{ev(12, "released", "jobs/a"), ev(14, "acquired", "jobs/b")}, "index": 15})
		case 4: // nothing new, the wait ended
			writeJSON(w, 200, map[string]any{"events": []any{}, "index": 15})
		default:
			w.Header().Set(HeaderIndex, "40")
			writeJSON(w, 410, map[string]any{"error": wire.CodeCompacted, "message": "gone", "field": "index", "oldest_index": 40})
		}
	})
	c, _ := newTestClient(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []uint64
	var last WatchResponse
	for resp := range c.Events().Watch(ctx, 10, EventFilter{Prefix: "jobs/", Types: []string{EventAcquired, EventReleased}, WaitTime: 2 * time.Second}) {
		for _, e := range resp.Events {
			got = append(got, e.Index)
		}
		last = resp
	}
	if want := []uint64{11, 12, 14}; !slices.Equal(got, want) {
		t.Fatalf("delivered indexes %v, want %v", got, want)
	}
	var ae *APIError
	if !errors.Is(last.Err, ErrCompacted) || !errors.As(last.Err, &ae) || ae.OldestIndex != 40 {
		t.Fatalf("last response %+v, want ErrCompacted with oldest index 40", last)
	}
	var asked []string
	for _, r := range srv.requests() {
		asked = append(asked, r.Query.Get("index"))
	}
	if want := []string{"10", "12", "12", "15", "15"}; !slices.Equal(asked, want) {
		t.Errorf("indexes asked %v, want %v", asked, want)
	}
}

// TestWatchStopsWithContext: cancelling the context closes the channel
// without an error.
func TestWatchStopsWithContext(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		writeJSON(w, 200, map[string]any{"events": []any{}, "index": 1})
	})
	c, _ := newTestClient(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	ch := c.Events().Watch(ctx, 0, EventFilter{})
	time.AfterFunc(50*time.Millisecond, cancel)
	for resp := range ch {
		t.Fatalf("got %+v after cancel", resp)
	}
}

// TestEventsSinceAndList: the one-shot calls pass the index and do not
// wait, or start at the oldest event without an index.
func TestEventsSinceAndList(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		q := r.URL.Query()
		idx, _ := strconv.ParseUint(q.Get("index"), 10, 64)
		if q.Has("index") && q.Get("wait") != "0s" {
			writeError(w, 400, wire.CodeInvalidQuery, "Since must not wait")
			return
		}
		writeJSON(w, 200, map[string]any{"events": []any{ev(idx+1, "expired", "k")}, "index": idx + 1})
	})
	c, _ := newTestClient(t, srv.URL)
	evs, next, err := c.Events().Since(context.Background(), 7, EventFilter{})
	if err != nil || len(evs) != 1 || evs[0].Index != 8 || evs[0].Type != EventExpired || next != 8 {
		t.Fatalf("Since(7) = %+v, %d, %v", evs, next, err)
	}
	if _, _, err := c.Events().List(context.Background(), EventFilter{}); err != nil {
		t.Fatal(err)
	}
	if r := srv.requests()[1]; r.Query.Has("index") {
		t.Errorf("List sent index %q, want none (from the oldest event)", r.Query.Get("index"))
	}
}
