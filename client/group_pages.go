package client

import (
	"context"
	"fmt"
	"maps"
)

// Get reads a group with the target and actual owner of every key. The
// server answers a group's keys in pages (1000 by default); Get follows
// them and returns every key, with the rest of the group (workers, their
// counts, settings) as the first page had it. GetPage reads one page.
func (g *GroupsAPI) Get(ctx context.Context, name string, q *QueryOptions) (*Group, *Meta, error) {
	var first *Group
	meta, err := eachPage(fmt.Sprintf("get group %q", name), q, func(cursor string, q *QueryOptions) (string, *Meta, error) {
		out, meta, err := g.GetPage(ctx, name, PageOptions{Cursor: cursor}, q)
		if err != nil {
			return "", nil, err
		}
		if first == nil {
			first = out
		} else {
			first.Keys = append(first.Keys, out.Keys...)
		}
		return out.Next, meta, nil
	})
	if err != nil {
		return nil, nil, err
	}
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
// one page.
func (g *GroupsAPI) Assignment(ctx context.Context, name, worker string, q *QueryOptions) (map[string]string, *Meta, error) {
	plan := map[string]string{}
	meta, err := eachPage(fmt.Sprintf("group %q assignment", name), q, func(cursor string, q *QueryOptions) (string, *Meta, error) {
		out, meta, err := g.AssignmentPage(ctx, name, worker, PageOptions{Cursor: cursor}, q)
		if err != nil {
			return "", nil, err
		}
		maps.Copy(plan, out.Assignment)
		return out.Next, meta, nil
	})
	if err != nil {
		return nil, nil, err
	}
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
