package client

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strconv"

	"github.com/tenure-io/tenure/client/wire"
)

// PageOptions select one page of a list (ListPage).
type PageOptions struct {
	// Limit is the most items of the page: zero means the server's
	// default (1000); the server refuses more than its maximum (10000).
	Limit int
	// Cursor is the Next of the previous page; empty for the first page.
	// It is opaque: pass it back as it came.
	Cursor string
}

// List reads every lease that matches opts (nil: all), ordered by key. The
// server answers lists in pages (at most 1000 leases each by default);
// List follows them until the last and returns them all, so its memory
// grows with the answer: a caller of a large cluster that can work a page
// at a time uses ListPage.
//
// Pages are read one after the other, so the answer is not one view: a
// key is never listed twice, and a key that exists through the whole
// listing is always listed; a key created or removed meanwhile may be
// listed or not. Meta is the first page's: a watcher that passes
// Meta.Index as q.WaitIndex to its next List misses no change made while
// it paged. With q.WaitIndex only the first page blocks.
func (a *LeasesAPI) List(ctx context.Context, opts *ListOptions, q *QueryOptions) ([]LeaseInfo, *Meta, error) {
	all, meta, err := eachPage("list leases", q, func(cursor string, q *QueryOptions) ([]LeaseInfo, string, *Meta, error) {
		out, meta, err := a.ListPage(ctx, opts, PageOptions{Cursor: cursor}, q)
		if err != nil {
			return nil, "", nil, err
		}
		return out.Leases, out.Next, meta, nil
	})
	if err == nil && all == nil {
		all = []LeaseInfo{} // no lease: an empty list, not nil
	}
	return all, meta, err
}

// eachPage reads a list page by page until the last: read reads the page
// after cursor with q (only the first page carries q's wait; the later
// ones read the state as it is) and returns its items, Next and Meta.
// eachPage returns the items of every page and the first page's Meta, and
// an error if the server answers one cursor twice.
func eachPage[T any](what string, q *QueryOptions, read func(cursor string, q *QueryOptions) ([]T, string, *Meta, error)) ([]T, *Meta, error) {
	var (
		all   []T
		first *Meta
	)
	cursor := ""
	for {
		items, next, meta, err := read(cursor, q)
		if err != nil {
			return nil, nil, err
		}
		all = append(all, items...)
		if first == nil {
			first = meta
		}
		if next == "" {
			return all, first, nil
		}
		if next == cursor {
			return nil, nil, fmt.Errorf("%s: the server answered cursor %q twice", what, next)
		}
		cursor = next
		if q != nil {
			q = &QueryOptions{Stale: q.Stale}
		}
	}
}

// ListPage reads one page of the leases that match opts (nil: all),
// ordered by key: at most page.Limit of them, after page.Cursor. The
// answer's Next is the Cursor of the next page, empty after the last one;
// its Index is the Raft index the page was read at. A page may hold fewer
// leases than the limit, even none, and still have a Next (the server
// bounds the records it examines per page): continue until Next is empty.
// With q.WaitIndex it blocks until any lease changes past that index.
func (a *LeasesAPI) ListPage(ctx context.Context, opts *ListOptions, page PageOptions, q *QueryOptions) (*wire.LeaseList, *Meta, error) {
	var filter map[string]string
	if opts != nil {
		filter = map[string]string{"prefix": opts.Prefix, "state": string(opts.State), "holder": opts.Holder}
	}
	r, err := pageRequest("/v1/leases", page, filter, q)
	if err != nil {
		return nil, nil, err
	}
	out, meta, err := call[wire.LeaseList](ctx, a.c, r, "lease list")
	if err != nil {
		return nil, nil, err
	}
	if meta.Index == 0 {
		meta.Index = out.Index
	}
	return out, meta, nil
}

// List returns every group's summary, ordered by name. The server answers
// in pages (1000 groups each by default); List follows them to the last,
// as LeasesAPI.List does (the first page's Meta; only the first page
// blocks). ListPage reads one page.
func (g *GroupsAPI) List(ctx context.Context, q *QueryOptions) ([]GroupSummary, *Meta, error) {
	return eachPage("list groups", q, func(cursor string, q *QueryOptions) ([]GroupSummary, string, *Meta, error) {
		out, meta, err := g.ListPage(ctx, PageOptions{Cursor: cursor}, q)
		if err != nil {
			return nil, "", nil, err
		}
		return out.Groups, out.Next, meta, nil
	})
}

// ListPage reads one page of the groups' summaries, ordered by name: at
// most page.Limit, after page.Cursor. The answer's Next is the Cursor of
// the next page, empty after the last one.
func (g *GroupsAPI) ListPage(ctx context.Context, page PageOptions, q *QueryOptions) (*wire.GroupList, *Meta, error) {
	r, err := pageRequest("/v1/groups", page, nil, q)
	if err != nil {
		return nil, nil, err
	}
	return call[wire.GroupList](ctx, g.c, r, "groups")
}

// pageRequest is the GET of one page of path: page's cursor and limit,
// the parameters in extra, then q's consistency and wait (q may be nil).
func pageRequest(path string, page PageOptions, extra map[string]string, q *QueryOptions) (*request, error) {
	params, err := page.params()
	if err != nil {
		return nil, err
	}
	maps.Copy(params, extra)
	wait := q.apply(params)
	return &request{method: http.MethodGet, path: path, query: params, wait: wait}, nil
}

// params are the query parameters of page.
func (p PageOptions) params() (map[string]string, error) {
	if p.Limit < 0 {
		return nil, fmt.Errorf("%w: limit %d is negative", ErrInvalid, p.Limit)
	}
	params := map[string]string{}
	if p.Limit > 0 {
		params["limit"] = strconv.Itoa(p.Limit)
	}
	if p.Cursor != "" {
		params["cursor"] = p.Cursor
	}
	return params, nil
}

// ListTokens lists every token, without secrets, by accessor id. The
// server answers in pages; ListTokens follows them to the last.
// ListTokensPage reads one page.
func (a *ACLAPI) ListTokens(ctx context.Context) ([]ACLToken, error) {
	all, _, err := eachPage("list tokens", nil, func(cursor string, _ *QueryOptions) ([]ACLToken, string, *Meta, error) {
		out, err := a.ListTokensPage(ctx, PageOptions{Cursor: cursor})
		if err != nil {
			return nil, "", nil, err
		}
		return out.Tokens, out.Next, nil, nil
	})
	return all, err
}

// ListTokensPage reads one page of the tokens, without secrets, by
// accessor id: at most page.Limit, after page.Cursor. The answer's Next is
// the Cursor of the next page, empty after the last one.
func (a *ACLAPI) ListTokensPage(ctx context.Context, page PageOptions) (*ACLTokenList, error) {
	r, err := pageRequest("/v1/acl/tokens", page, nil, nil)
	if err != nil {
		return nil, err
	}
	return callOnly[ACLTokenList](ctx, a.c, r, "tokens")
}

// Get reads a group with the target and actual owner of every key. The
// server answers a group's keys in pages (1000 by default); Get follows
// them and returns every key, with the rest of the group (workers, their
// counts, settings) as the first page had it. GetPage reads one page.
func (g *GroupsAPI) Get(ctx context.Context, name string, q *QueryOptions) (*Group, *Meta, error) {
	var first *Group
	rest, meta, err := eachPage(fmt.Sprintf("get group %q", name), q, func(cursor string, q *QueryOptions) ([]GroupKey, string, *Meta, error) {
		out, meta, err := g.GetPage(ctx, name, PageOptions{Cursor: cursor}, q)
		if err != nil {
			return nil, "", nil, err
		}
		if first == nil {
			first = out
			return nil, out.Next, meta, nil
		}
		return out.Keys, out.Next, meta, nil
	})
	if err != nil {
		return nil, nil, err
	}
	first.Keys = append(first.Keys, rest...)
	first.Next = ""
	return first, meta, nil
}

// GetPage reads a group with one page of its keys: at most page.Limit,
// after page.Cursor, in key order. The answer's Next is the Cursor of the
// next page, empty after the last one.
func (g *GroupsAPI) GetPage(ctx context.Context, name string, page PageOptions, q *QueryOptions) (*Group, *Meta, error) {
	p, err := groupPath(name, "")
	if err != nil {
		return nil, nil, err
	}
	r, err := pageRequest(p, page, nil, q)
	if err != nil {
		return nil, nil, err
	}
	return call[Group](ctx, g.c, r, "group")
}

// Assignment reads the target plan of a group: key → worker id, only the
// keys of worker when it is not empty. With q.WaitIndex it blocks until
// the plan changes past that index (Meta.Index of the previous answer).
// The server answers the plan in pages of keys; Assignment follows them
// (only the first blocks; Meta is the first page's). AssignmentPage reads
// one page; Plan also reads the keys being prepared.
func (g *GroupsAPI) Assignment(ctx context.Context, name, worker string, q *QueryOptions) (map[string]string, *Meta, error) {
	plan, meta, err := g.Plan(ctx, name, worker, q)
	if err != nil {
		return nil, nil, err
	}
	return plan.Assignment, meta, nil
}

// Plan is Assignment with the keys being prepared (Assignment.Prepare: a
// key about to move to a worker that prepares it first, a warm hand-off),
// of worker only when it is not empty.
func (g *GroupsAPI) Plan(ctx context.Context, name, worker string, q *QueryOptions) (*Assignment, *Meta, error) {
	plan := &Assignment{Group: name, Assignment: map[string]string{}, Prepare: map[string]string{}}
	_, meta, err := eachPage(fmt.Sprintf("group %q assignment", name), q, func(cursor string, q *QueryOptions) ([]struct{}, string, *Meta, error) {
		out, meta, err := g.AssignmentPage(ctx, name, worker, PageOptions{Cursor: cursor}, q)
		if err != nil {
			return nil, "", nil, err
		}
		maps.Copy(plan.Assignment, out.Assignment)
		maps.Copy(plan.Prepare, out.Prepare)
		plan.HiddenKeys += out.HiddenKeys
		return nil, out.Next, meta, nil
	})
	if err != nil {
		return nil, nil, err
	}
	plan.Index = meta.Index
	return plan, meta, nil
}

// AssignmentPage reads one page of the target plan of a group (of worker
// only, when it is not empty): the targets of at most page.Limit keys
// after page.Cursor. The answer's Next is the Cursor of the next page,
// empty after the last one.
func (g *GroupsAPI) AssignmentPage(ctx context.Context, name, worker string, page PageOptions, q *QueryOptions) (*Assignment, *Meta, error) {
	p, err := groupPath(name, "/assignment")
	if err != nil {
		return nil, nil, err
	}
	r, err := pageRequest(p, page, map[string]string{"worker": worker}, q)
	if err != nil {
		return nil, nil, err
	}
	out, meta, err := call[Assignment](ctx, g.c, r, "assignment")
	if err != nil {
		return nil, nil, err
	}
	if meta.Index == 0 {
		meta.Index = out.Index
	}
	return out, meta, nil
}
