package fsm

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
)

// listAll pages through f with limit, applying between the pages what
// between returns (nil: nothing), and returns every key in the order
// listed.
func listAll(t *testing.T, n *node, f Filter, limit int, between func(page int) []Command) []string {
	t.Helper()
	var keys []string
	after := ""
	for page := 0; ; page++ {
		if page > 10_000 {
			t.Fatalf("listing of %+v did not end", f)
		}
		res := n.m.ListPage(f, Page{After: after, Limit: limit})
		if len(res.Leases) > limit {
			t.Fatalf("page %d has %d leases, limit %d", page, len(res.Leases), limit)
		}
		for _, l := range res.Leases {
			keys = append(keys, l.Key)
		}
		if res.Next == "" {
			return keys
		}
		if res.Next <= after {
			t.Fatalf("page %d: next %q does not move past %q", page, res.Next, after)
		}
		after = res.Next
		if between != nil {
			n.all(between(page)...)
		}
	}
}

// collectPages pages through a listing from the start and returns every
// name it listed, in order. list returns the names of page page (counted
// from 0) after the cursor after, and the cursor of the next page ("" after
// the last); between, when not nil, runs after each page but the last. The
// test fails with stuck when the listing takes more than maxPages pages.
func collectPages(t *testing.T, stuck string, maxPages int, list func(page int, after string) ([]string, string), between func(page int)) []string {
	t.Helper()
	var got []string
	after := ""
	for page := 0; ; page++ {
		if page >= maxPages {
			t.Fatal(stuck)
		}
		names, next := list(page, after)
		got = append(got, names...)
		if next == "" {
			return got
		}
		after = next
		if between != nil {
			between(page)
		}
	}
}

// A listing by pages returns what one whole List returns, for every filter
// and page size, including group keys never acquired.
func TestListPageMatchesList(t *testing.T) {
	n := newNode(t)
	var cmds []Command
	for i := range 40 {
		cmds = append(cmds, acquire(fmt.Sprintf("k/%02d", i), fmt.Sprintf("w%d", i%3)))
	}
	for i := 0; i < 40; i += 4 {
		cmds = append(cmds, Release{Key: fmt.Sprintf("k/%02d", i), Holder: fmt.Sprintf("w%d", i%3), Token: uint64(i + 1)})
	}
	cmds = append(cmds,
		GroupPut{Name: "g1", Keys: []string{"k/05", "k/40", "k/41", "p/1"}},
		GroupPut{Name: "g2", Keys: []string{"k/41", "k/42", "z/0"}},
	)
	n.all(cmds...)
	filters := []Filter{
		{},
		{Prefix: "k/"},
		{Prefix: "k/1"},
		{State: "held"},
		{State: "free"},
		{State: "free", NeverAcquired: true},
		{Prefix: "k/4", State: "free", NeverAcquired: true},
		{Holder: "w1"},
		{Prefix: "nope"},
	}
	for _, f := range filters {
		want, wantIndex := n.m.List(f)
		wantKeys := make([]string, 0, len(want))
		for _, l := range want {
			wantKeys = append(wantKeys, l.Key)
		}
		for _, limit := range []int{1, 2, 3, 7, 100} {
			t.Run(fmt.Sprintf("%+v/limit=%d", f, limit), func(t *testing.T) {
				got := listAll(t, n, f, limit, nil)
				if !slices.Equal(got, wantKeys) {
					t.Errorf("pages = %q, want %q", got, wantKeys)
				}
				if res := n.m.ListPage(f, Page{Limit: limit}); res.Index != wantIndex {
					t.Errorf("page index = %d, want %d (List's)", res.Index, wantIndex)
				}
			})
		}
	}
}

// While keys come and go between pages, a key is never listed twice and a
// key that exists through the whole listing is never skipped.
func TestListPageUnderChange(t *testing.T) {
	n := newNode(t)
	var cmds []Command
	for i := range 100 {
		cmds = append(cmds, acquire(fmt.Sprintf("k/%03d", 2*i), "w"))
	}
	n.all(cmds...)
	got := listAll(t, n, Filter{}, 7, func(page int) []Command {
		// Between pages: new keys before and after the cursor, and a
		// key released and forgotten (it may or may not be listed).
		gone := fmt.Sprintf("k/%03d", 2*(99-page))
		return []Command{
			acquire(fmt.Sprintf("k/%03d", 2*page+1), "x"),
			acquire(fmt.Sprintf("k/%03d", 199-2*page), "y"),
			Release{Key: gone, Holder: "w", Token: uint64(100 - page)},
			Forget{Key: gone, Token: uint64(100 - page)},
		}
	})
	seen := map[string]bool{}
	for i, k := range got {
		if seen[k] {
			t.Errorf("key %q listed twice", k)
		}
		seen[k] = true
		if i > 0 && got[i-1] >= k {
			t.Errorf("keys out of order: %q then %q", got[i-1], k)
		}
	}
	// Keys k/000 … k/158 were never forgotten (fewer than 20 pages).
	for i := range 80 {
		if k := fmt.Sprintf("k/%03d", 2*i); !seen[k] {
			t.Errorf("key %q existed through the listing but was skipped", k)
		}
	}
}

// One page costs memory in proportion to the page, not to the number of
// leases: the state machine walks its key index from the cursor instead of
// copying and sorting every lease.
func TestListPageMemoryIndependentOfTotal(t *testing.T) {
	perPage := func(total int) uint64 {
		n := newNode(t)
		for start := 0; start < total; start += 50_000 {
			cmds := make([]Command, 0, 50_000)
			for i := start; i < min(total, start+50_000); i++ {
				cmds = append(cmds, acquire(fmt.Sprintf("k/%07d", i), "w"))
			}
			n.batch(cmds...)
		}
		f := Filter{Prefix: "k/", State: "held"}
		n.m.ListPage(f, Page{After: "k/0000500", Limit: 50}) // warm up
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		const runs = 20
		for range runs {
			if res := n.m.ListPage(f, Page{After: "k/0000500", Limit: 50}); len(res.Leases) != 50 {
				t.Fatalf("page has %d leases, want 50", len(res.Leases))
			}
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / runs
	}
	small, large := perPage(1_000), perPage(100_000)
	// A page of 50 pointers is well under 4 KiB; a copy of 100,000 is 800 KiB.
	if large > 4<<10 || large > 2*small+1024 {
		t.Errorf("a page of 50 allocates %d bytes with 100,000 leases and %d with 1,000: want a bound independent of the total", large, small)
	}
}

// Groups list by pages of names: every group once, in name order, while
// groups come and go between pages; the index is the placement index.
func TestGroupsPage(t *testing.T) {
	n := newNode(t)
	for i := range 30 {
		n.all(GroupPut{Name: fmt.Sprintf("g%02d", 2*i), Keys: []string{"k"}})
	}
	got := collectPages(t, "listing of groups did not end", 101, func(page int, after string) ([]string, string) {
		groups, next, index := n.m.GroupsPage(after, 4)
		if len(groups) > 4 {
			t.Fatalf("page %d has %d groups, want at most 4", page, len(groups))
		}
		if _, want := n.m.Groups(); index != want {
			t.Errorf("page %d index = %d, want the placement index %d", page, index, want)
		}
		var names []string
		for _, g := range groups {
			names = append(names, g.Name)
		}
		return names, next
	}, func(page int) {
		// Between pages: a group before the cursor, one after, one gone.
		n.all(GroupPut{Name: fmt.Sprintf("g%02d", 2*page+1), Keys: []string{"k"}},
			GroupDelete{Name: fmt.Sprintf("g%02d", 58-2*page)})
	})
	for i, name := range got {
		if i > 0 && got[i-1] >= name {
			t.Errorf("groups out of order or twice: %q then %q", got[i-1], name)
		}
	}
	seen := map[string]bool{}
	for _, name := range got {
		seen[name] = true
	}
	for i := range 20 { // g00 … g38 were never deleted
		if name := fmt.Sprintf("g%02d", 2*i); !seen[name] {
			t.Errorf("group %q existed through the listing but was skipped", name)
		}
	}
}

// ACL tokens list by pages of accessor ids, every token once, in order.
func TestACLTokensPage(t *testing.T) {
	n := newNode(t)
	var want []string
	for i := range 11 {
		id := fmt.Sprintf("t%02d", i)
		n.all(ACLTokenSet{Token: token(id, "h"+id)})
		want = append(want, id)
	}
	got := collectPages(t, "11 tokens in pages of 4 took more than 3 pages", 4, func(_ int, after string) ([]string, string) {
		tokens, next, index := n.m.ACLTokensPage(after, 4)
		if _, want := n.m.ACLTokens(); index != want {
			t.Errorf("index = %d, want the ACL index %d", index, want)
		}
		var ids []string
		for _, tk := range tokens {
			ids = append(ids, tk.AccessorID)
		}
		return ids, next
	}, nil)
	if !slices.Equal(got, want) {
		t.Errorf("token pages = %q, want %q", got, want)
	}
}
