package fsm

import (
	"math"
	"slices"
	"sort"
	"strings"
)

// PageScan bounds the records one ListPage examines, per source (the
// leases, and each group's keys when never-acquired keys are listed), as a
// multiple of the page's limit. A page whose filter matches few records
// may therefore hold fewer leases than its limit, even none, and still
// have a Next: the read lock is never held for a walk of the whole state.
const PageScan = 16

// minPageScan is the least number of records a page examines per source.
const minPageScan = 1024

// Page selects one page of a listing.
type Page struct {
	// After lists the keys after this one, exclusive: "" starts at the
	// first key, a previous page's Next continues after it.
	After string
	// Limit is the most leases the page holds; it must be positive.
	Limit int
}

// PageResult is one page of a listing: leases in key order, the index
// they were read at (as List's), and Next, the After of the next page, or
// "" when the listing is complete.
//
// Pages of one listing are read at different times. Since each page lists
// the keys after the previous page's last one, a key is never listed
// twice, and a key that exists from the first page to the last is never
// skipped; a key created or removed meanwhile may or may not be listed.
type PageResult struct {
	Leases []*Lease
	Index  uint64
	Next   string
}

// ListPage returns one page of the leases that match f: at most p.Limit
// of them, ordered by key, after p.After. It holds the read lock for one
// page only and copies nothing but the page (the *Lease values are shared
// and never modified). A p.Limit below 1 lists one lease per page.
func (m *Machine) ListPage(f Filter, p Page) PageResult {
	limit := max(p.Limit, 1)
	scan := math.MaxInt
	if limit < math.MaxInt/PageScan {
		scan = max(limit*PageScan, minPageScan)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.page(f, p.After, min(limit, math.MaxInt-1), scan)
}

// page lists what matches f after the key after: at most limit leases,
// examining at most scan records of each source. m.mu is held.
func (m *Machine) page(f Filter, after string, limit, scan int) PageResult {
	// The first key to look at: after the cursor, and within the prefix.
	from := f.Prefix
	if after != "" && after >= f.Prefix {
		from = after + "\x00" // the smallest string after it
	}
	// horizon: the last key examined by a source that stopped before its
	// end; beyond it this page cannot know what is missing.
	var horizon string
	stopped := false
	stopAt := func(key string) {
		if !stopped || key < horizon {
			horizon, stopped = key, true
		}
	}

	var out []*Lease
	examined, last := 0, ""
	m.sorted.ascend(from, func(l *Lease) bool {
		if !strings.HasPrefix(l.Key, f.Prefix) {
			return false // past the prefix: the source is complete
		}
		if len(out) == limit || examined == scan {
			stopAt(last)
			return false
		}
		examined++
		last = l.Key
		if f.match(l) {
			out = append(out, l)
		}
		return true
	})
	index := m.leaseIndex
	if f.NeverAcquired && f.State == "free" && f.Holder == "" {
		index = max(index, m.groupIndex)
		n := len(out)
		for _, g := range m.groups {
			out = m.neverAcquiredPage(out, g, from, f.Prefix, limit+1, scan, stopAt)
		}
		if len(out) > n {
			// A key in two groups is listed once.
			sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
			out = slices.CompactFunc(out, func(a, b *Lease) bool { return a.Key == b.Key })
		}
	}
	if stopped {
		// Drop what lies past the horizon: the next page finds it.
		cut := sort.Search(len(out), func(i int) bool { return out[i].Key > horizon })
		clear(out[cut:])
		out = out[:cut]
	}
	res := PageResult{Leases: out, Index: index}
	switch {
	case len(out) > limit:
		clear(out[limit:])
		res.Leases = out[:limit]
		res.Next = out[limit-1].Key
	case stopped:
		res.Next = horizon
	}
	return res
}

// neverAcquiredPage appends to out the keys of g from from on, within
// prefix, that have no lease record: at most limit of them, examining at
// most scan keys; where it stops early it calls stopAt. m.mu is held.
func (m *Machine) neverAcquiredPage(out []*Lease, g *Group, from, prefix string, limit, scan int, stopAt func(string)) []*Lease {
	found, examined := 0, 0
	for i := sort.SearchStrings(g.Keys, from); i < len(g.Keys) && strings.HasPrefix(g.Keys[i], prefix); i++ {
		if found == limit || examined == scan {
			stopAt(g.Keys[i-1])
			return out
		}
		examined++
		if k := g.Keys[i]; m.leases[k] == nil {
			out = append(out, &Lease{Key: k, Reason: ReasonNeverAcquired})
			found++
		}
	}
	return out
}

// GroupsPage returns the groups whose names come after after, in name
// order: at most limit of them (at least 1), the name to pass as after
// for the next page ("" after the last one), and the placement index.
func (m *Machine) GroupsPage(after string, limit int) ([]*Group, string, uint64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out, next := firstAfter(m.groups, after, limit)
	return out, next, m.groupIndex
}

// ACLTokensPage returns the tokens whose accessor ids come after after, in
// order: at most limit of them (at least 1), the id to pass as after for
// the next page ("" after the last one), and the ACL index.
func (m *Machine) ACLTokensPage(after string, limit int) ([]*ACLToken, string, uint64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out, next := firstAfter(m.acl.tokens, after, limit)
	return out, next, m.acl.index
}

// firstAfter returns the values of the first limit (at least 1) keys of
// byName after after, in key order, and the key the next page starts
// after ("" when none follows). It walks the whole map but keeps at most
// 2×limit+1 values, so its memory is the page's, not the map's.
func firstAfter[V any](byName map[string]V, after string, limit int) ([]V, string) {
	limit = max(limit, 1)
	type item struct {
		name string
		v    V
	}
	byKey := func(a, b item) int { return strings.Compare(a.name, b.name) }
	var keep []item
	for name, v := range byName {
		if name <= after {
			continue
		}
		keep = append(keep, item{name, v})
		if len(keep) > 2*limit {
			// Keep the first limit+1 names: the page and whether more follow.
			slices.SortFunc(keep, byKey)
			clear(keep[limit+1:])
			keep = keep[:limit+1]
		}
	}
	slices.SortFunc(keep, byKey)
	next := ""
	if len(keep) > limit {
		keep = keep[:limit]
		next = keep[limit-1].name
	}
	out := make([]V, len(keep))
	for i, it := range keep {
		out[i] = it.v
	}
	return out, next
}

// Filter selects leases for List. Zero fields match everything.
type Filter struct {
	Prefix string
	// State is "held", "free" or "" for both.
	State  string
	Holder string
	// NeverAcquired, with State "free", also lists the keys of groups that
	// have no lease record (never acquired, or forgotten): each as a free
	// record with no holder, Token 0 and ReasonNeverAcquired. A Holder
	// filter excludes them.
	NeverAcquired bool
}

func (f Filter) match(l *Lease) bool {
	if !strings.HasPrefix(l.Key, f.Prefix) {
		return false
	}
	if f.Holder != "" && l.Holder != f.Holder {
		return false
	}
	switch f.State {
	case "held":
		return l.Held
	case "free":
		return !l.Held
	}
	return true
}

// List returns the leases that match f, ordered by key, and the index
// they were read at: the lease index, or, when f lists never-acquired
// group keys, the higher of the lease and group indexes (a group change
// changes that answer too). It copies every match under the read lock:
// callers that answer clients use ListPage.
func (m *Machine) List(f Filter) ([]*Lease, uint64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	res := m.page(f, "", math.MaxInt-1, math.MaxInt)
	if res.Leases == nil {
		res.Leases = []*Lease{}
	}
	return res.Leases, res.Index
}

// inGroup reports whether key belongs to a group. m.mu is held.
func (m *Machine) inGroup(key string) bool {
	for _, g := range m.groups {
		if i := sort.SearchStrings(g.Keys, key); i < len(g.Keys) && g.Keys[i] == key {
			return true
		}
	}
	return false
}

// InGroup reports whether key belongs to a group.
func (m *Machine) InGroup(key string) bool { return rlocked(m, func() bool { return m.inGroup(key) }) }
