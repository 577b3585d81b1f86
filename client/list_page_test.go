package client

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

// pagedLeases is a fake server of GET /v1/leases that answers pages of
// `per` from keys, with the index of each page growing by one.
func pagedLeases(t *testing.T, keys []string, per int) *fakeServer {
	return newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		start := 0
		if c := r.URL.Query().Get("cursor"); c != "" {
			fmt.Sscanf(c, "c%d", &start)
		}
		end := min(start+per, len(keys))
		leases := []any{}
		for _, k := range keys[start:end] {
			leases = append(leases, testLease(k))
		}
		next := ""
		if end < len(keys) {
			next = fmt.Sprintf("c%d", end)
		}
		w.Header().Set(HeaderIndex, fmt.Sprint(100+n))
		writeJSON(w, 200, map[string]any{"leases": leases, "index": 100 + n, "next": next})
	})
}

// List gets every lease however many pages the server answers in: it
// follows next, keeps the filter and the consistency on every page, blocks
// on the first page only, and reports the first page's index (a watcher
// that blocks on it misses no change made while it paged).
func TestListFollowsPages(t *testing.T) {
	var keys []string
	for i := range 7 {
		keys = append(keys, fmt.Sprintf("k/%d", i))
	}
	srv := pagedLeases(t, keys, 3)
	c, _ := newTestClient(t, srv.URL)
	got, meta, err := c.Leases().List(context.Background(), &ListOptions{Prefix: "k/"}, &QueryOptions{Stale: true, WaitIndex: 5, WaitTime: time.Second})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var gotKeys []string
	for _, l := range got {
		gotKeys = append(gotKeys, l.Key)
	}
	if !slices.Equal(gotKeys, keys) {
		t.Errorf("List = %q, want %q", gotKeys, keys)
	}
	if meta.Index != 101 {
		t.Errorf("meta.Index = %d, want 101 (the first page's)", meta.Index)
	}
	reqs := srv.requests()
	if len(reqs) != 3 {
		t.Fatalf("List sent %d requests, want 3 (pages of 3 of 7)", len(reqs))
	}
	for i, r := range reqs {
		q := r.Query
		if q.Get("prefix") != "k/" || q.Get("stale") != "true" {
			t.Errorf("request %d: query %v, want prefix k/ and stale on every page", i, q)
		}
		wantCursor, blocking := fmt.Sprintf("c%d", 3*i), i == 0
		if i == 0 {
			wantCursor = ""
		}
		if q.Get("cursor") != wantCursor || q.Has("cursor") != (i > 0) {
			t.Errorf("request %d: cursor %q, want %q", i, q.Get("cursor"), wantCursor)
		}
		if q.Has("index") != blocking || q.Has("wait") != blocking {
			t.Errorf("request %d: query %v; want index and wait on the first page only", i, q)
		}
	}
}

// ListPage reads one page: it sends limit and cursor and returns next.
func TestListPage(t *testing.T) {
	srv := pagedLeases(t, []string{"a", "b", "c", "d", "e"}, 2)
	c, _ := newTestClient(t, srv.URL)
	ctx := context.Background()
	page, meta, err := c.Leases().ListPage(ctx, nil, PageOptions{Limit: 2}, nil)
	if err != nil {
		t.Fatalf("ListPage: %v", err)
	}
	if len(page.Leases) != 2 || page.Next != "c2" || page.Index != 101 || meta.Index != 101 {
		t.Errorf("first page = %d leases, next %q, index %d (meta %d); want 2, c2, 101", len(page.Leases), page.Next, page.Index, meta.Index)
	}
	page, _, err = c.Leases().ListPage(ctx, nil, PageOptions{Limit: 2, Cursor: page.Next}, nil)
	if err != nil {
		t.Fatalf("ListPage: %v", err)
	}
	if len(page.Leases) != 2 || page.Leases[0].Key != "c" || page.Next != "c4" {
		t.Errorf("second page = %+v, next %q; want c and d, next c4", page.Leases, page.Next)
	}
	reqs := srv.requests()
	if q := reqs[1].Query; q.Get("limit") != "2" || q.Get("cursor") != "c2" {
		t.Errorf("second request query %v, want limit 2 and cursor c2", q)
	}
	if _, _, err := c.Leases().ListPage(ctx, nil, PageOptions{Limit: -1}, nil); err == nil {
		t.Errorf("ListPage with limit -1: no error")
	}
}

// A server that answers the same next twice would make List loop forever:
// List fails instead.
func TestListStopsOnRepeatedCursor(t *testing.T) {
	srv := answeringServer(t, 200, map[string]any{"leases": []any{testLease("a")}, "index": 1, "next": "same"})
	c, _ := newTestClient(t, srv.URL)
	if _, _, err := c.Leases().List(context.Background(), nil, nil); err == nil {
		t.Errorf("List with a server that repeats its cursor: no error")
	}
}

// Groups().List follows the pages of GET /v1/groups to the last.
func TestGroupsListFollowsPages(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.URL.Query().Get("cursor") == "" {
			writeJSON(w, 200, map[string]any{"groups": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}, "index": 3, "next": "x"})
			return
		}
		writeJSON(w, 200, map[string]any{"groups": []any{map[string]any{"name": "c"}}, "index": 4, "next": ""})
	})
	c, _ := newTestClient(t, srv.URL)
	groups, _, err := c.Groups().List(context.Background(), nil)
	if err != nil || len(groups) != 3 || groups[2].Name != "c" {
		t.Errorf("List = %+v, %v; want groups a, b and c", groups, err)
	}
	if reqs := srv.requests(); len(reqs) != 2 || reqs[1].Query.Get("cursor") != "x" {
		t.Errorf("requests %+v, want two, the second with cursor x", reqs)
	}
}

// ACL().ListTokens follows the pages of GET /v1/acl/tokens to the last.
func TestListTokensFollowsPages(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.URL.Query().Get("cursor") == "" {
			writeJSON(w, 200, map[string]any{"tokens": []any{map[string]any{"accessor_id": "a"}}, "index": 3, "next": "x"})
			return
		}
		writeJSON(w, 200, map[string]any{"tokens": []any{map[string]any{"accessor_id": "b"}}, "index": 3, "next": ""})
	})
	c, _ := newTestClient(t, srv.URL)
	tokens, err := c.ACL().ListTokens(context.Background())
	if err != nil || len(tokens) != 2 || tokens[1].AccessorID != "b" {
		t.Errorf("ListTokens = %+v, %v; want tokens a and b", tokens, err)
	}
}

// Groups().Assignment and Groups().Get follow pages: the plan and the
// keys of every page, the rest of the group from the first page; only the
// first page blocks.
func TestGroupViewsFollowPages(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		second := r.URL.Query().Get("cursor") == "x"
		switch {
		case r.URL.Path == "/v1/groups/g/assignment" && !second:
			writeJSON(w, 200, map[string]any{"group": "g", "assignment": map[string]string{"a": "w1"}, "index": 7, "next": "x"})
		case r.URL.Path == "/v1/groups/g/assignment":
			writeJSON(w, 200, map[string]any{"group": "g", "assignment": map[string]string{"b": "w1"}, "index": 8, "next": ""})
		case !second:
			writeJSON(w, 200, map[string]any{"name": "g", "keys": []any{map[string]any{"key": "a"}}, "workers": []any{map[string]any{"id": "w1", "targets": 2}}, "next": "x"})
		default:
			writeJSON(w, 200, map[string]any{"name": "g", "keys": []any{map[string]any{"key": "b"}}, "workers": []any{map[string]any{"id": "w1", "targets": 2}}, "next": ""})
		}
	})
	c, _ := newTestClient(t, srv.URL)
	ctx := context.Background()
	plan, meta, err := c.Groups().Assignment(ctx, "g", "w1", &QueryOptions{WaitIndex: 5})
	if err != nil || len(plan) != 2 || plan["a"] != "w1" || plan["b"] != "w1" {
		t.Errorf("Assignment = %v, %v; want a and b to w1", plan, err)
	}
	if err == nil && meta.Index != 7 {
		t.Errorf("Assignment index %d, want 7 (the first page's)", meta.Index)
	}
	g, _, err := c.Groups().Get(ctx, "g", nil)
	if err != nil || len(g.Keys) != 2 || g.Keys[1].Key != "b" || len(g.Workers) != 1 || g.Next != "" {
		t.Errorf("Get = %+v, %v; want keys a and b, one worker, no next", g, err)
	}
	reqs := srv.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 2 pages of each", len(reqs))
	}
	if !reqs[0].Query.Has("index") || reqs[1].Query.Has("index") || reqs[1].Query.Get("worker") != "w1" {
		t.Errorf("assignment pages: queries %v then %v; want index on the first only, worker on both", reqs[0].Query, reqs[1].Query)
	}
}

// Workers follows the pages of GET /v1/workers; only the first blocks.
func TestWorkersFollowPages(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.URL.Query().Get("cursor") == "" {
			writeJSON(w, 200, map[string]any{"workers": []any{map[string]any{"id": "w1", "status": "alive"}}, "index": 7, "next": "x"})
			return
		}
		writeJSON(w, 200, map[string]any{"workers": []any{map[string]any{"id": "w2", "status": "alive"}}, "index": 8, "next": ""})
	})
	c, _ := newTestClient(t, srv.URL)
	ws, meta, err := c.Groups().Workers(context.Background(), &QueryOptions{WaitIndex: 5})
	if err != nil || len(ws) != 2 || ws[0].ID != "w1" || ws[1].ID != "w2" {
		t.Fatalf("Workers = %+v, %v; want w1 and w2", ws, err)
	}
	if meta.Index != 7 {
		t.Errorf("index %d, want 7 (the first page's)", meta.Index)
	}
	reqs := srv.requests()
	if len(reqs) != 2 || !reqs[0].Query.Has("index") || reqs[1].Query.Has("index") || reqs[1].Query.Get("cursor") != "x" {
		t.Errorf("requests %v; want two pages, the index on the first only", reqs)
	}
}
