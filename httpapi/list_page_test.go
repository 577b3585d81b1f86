package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
)

// pageThrough lists path page by page with limit, following next, as
// secret (with ACLs on), and returns the keys in the order listed and the
// number of pages.
func pageThrough(t *testing.T, base, secret, path string, limit int) ([]string, int) {
	t.Helper()
	var keys []string
	pages := eachPage(t, secret, fmt.Sprintf("%s%s&limit=%d", base, path, limit), 1000, func(page int, r reply) string {
		var out wire.LeaseList
		r.decode(t, &out)
		if out.Index == 0 || r.index(t) != out.Index {
			t.Errorf("page %d: body index %d, header index %d: want the same, non-zero", page, out.Index, r.index(t))
		}
		if len(out.Leases) > limit {
			t.Errorf("page %d holds %d leases, over the limit %d", page, len(out.Leases), limit)
		}
		for _, l := range out.Leases {
			keys = append(keys, l.Key)
		}
		return out.Next
	})
	return keys, pages
}

// eachPage gets the list at u (its query holding the limit) page by page
// as secret ("" for none), following next: page checks each answer (200)
// and returns its next. It fails past max pages, and returns the number of
// pages.
func eachPage(t *testing.T, secret, u string, max int, page func(n int, r reply) (next string)) int {
	t.Helper()
	cursor := ""
	for n := 1; ; n++ {
		if n > max {
			t.Fatalf("listing %s took more than %d pages", u, max)
		}
		pu := u
		if cursor != "" {
			pu += "&cursor=" + url.QueryEscape(cursor)
		}
		r := doAs(t, secret, http.MethodGet, pu, "")
		r.wantStatus(t, "GET "+pu, http.StatusOK)
		if cursor = page(n, r); cursor == "" {
			return n
		}
	}
}

// GET /v1/leases answers in pages of at most limit leases, ordered by key;
// following next lists every key once; the first page without a limit
// holds up to the default.
func TestListLeasesPages(t *testing.T) {
	tn := startNode(t)
	var want []string
	for i := range 25 {
		k := fmt.Sprintf("p/%02d", i)
		acquire(t, tn, k, "h")
		want = append(want, k)
	}
	acquire(t, tn, "q/1", "h")

	got, pages := pageThrough(t, tn.url, "", "/v1/leases?prefix=p/", 10)
	if !slices.Equal(got, want) {
		t.Errorf("pages of 10 listed %q, want %q", got, want)
	}
	if pages != 3 {
		t.Errorf("25 leases in pages of 10 took %d pages, want 3", pages)
	}
	// Stale reads page the same way.
	if got, _ := pageThrough(t, tn.url, "", "/v1/leases?stale&prefix=p/", 7); !slices.Equal(got, want) {
		t.Errorf("stale pages of 7 listed %q, want %q", got, want)
	}
	// Without a limit: one page of up to DefaultListLimit, and no next.
	r := do(t, http.MethodGet, tn.url+"/v1/leases", "")
	r.wantStatus(t, "list without limit", http.StatusOK)
	var all wire.LeaseList
	r.decode(t, &all)
	if len(all.Leases) != 26 || all.Next != "" {
		t.Errorf("list without limit: %d leases, next %q; want 26 and no next", len(all.Leases), all.Next)
	}
}

// A limit or cursor that cannot be used is refused with 400, naming the
// field and the rule.
func TestListLeasesPageBadInput(t *testing.T) {
	tn := startNode(t)
	acquire(t, tn, "k", "h")
	checkRefusals(t, tn.url, []refusal{
		{"limit zero", http.MethodGet, "/v1/leases?limit=0", "", 400, wire.CodeInvalidQuery, "limit", "from 1 to"},
		{"limit negative", http.MethodGet, "/v1/leases?limit=-3", "", 400, wire.CodeInvalidQuery, "limit", "from 1 to"},
		{"limit not a number", http.MethodGet, "/v1/leases?limit=ten", "", 400, wire.CodeInvalidQuery, "limit", "from 1 to"},
		{"limit over the maximum", http.MethodGet, "/v1/leases?" + fmt.Sprintf("limit=%d", MaxListLimit+1), "", 400, wire.CodeInvalidQuery, "limit", fmt.Sprintf("maximum is %d", MaxListLimit)},
		{"limit twice", http.MethodGet, "/v1/leases?limit=1&limit=2", "", 400, wire.CodeInvalidQuery, "limit", "once"},
		{"cursor not from next", http.MethodGet, "/v1/leases?cursor=" + url.QueryEscape("!!"), "", 400, wire.CodeInvalidQuery, "cursor", "next"},
		{"cursor empty", http.MethodGet, "/v1/leases?cursor=", "", 400, wire.CodeInvalidQuery, "cursor", "next"},
	})
}

// With ACLs on, a paginated list shows only what the token may read: the
// pages of scenes/ hold scenes/ keys only, and a cursor taken to another
// prefix does not reach past the prefix the token was checked on.
func TestListLeasesPagesWithACL(t *testing.T) {
	e := startACL(t, 1)
	url := e.leader().url
	e.policy(t, "scenes", rule("scenes/", client.RightRead, client.RightWrite))
	e.policy(t, "all", rule("", client.RightRead, client.RightWrite))
	sec := e.token(t, client.ACLTokenSpec{Policies: []string{"scenes"}}).SecretID
	admin := e.token(t, client.ACLTokenSpec{Policies: []string{"all"}}).SecretID
	var want []string
	for i := range 5 {
		for _, k := range []string{fmt.Sprintf("jobs/%d", i), fmt.Sprintf("scenes/%d", i), fmt.Sprintf("t/%d", i)} {
			doAs(t, admin, "PUT", url+"/v1/leases/"+k, `{"holder":"h","ttl":"30s"}`).wantStatus(t, "acquire "+k, 201)
		}
		want = append(want, fmt.Sprintf("scenes/%d", i))
	}
	got, _ := pageThrough(t, url, sec, "/v1/leases?prefix=scenes/", 2)
	if !slices.Equal(got, want) {
		t.Errorf("scenes token listed %q, want %q", got, want)
	}
	// The admin's cursor after jobs/4, used with prefix scenes/, lists
	// scenes/ only; without the prefix the token is refused.
	r := doAs(t, admin, "GET", url+"/v1/leases?limit=5", "")
	r.wantStatus(t, "admin first page", 200)
	var first wire.LeaseList
	r.decode(t, &first)
	if first.Next == "" {
		t.Fatalf("admin's first page of 5 of 15 has no next")
	}
	r = doAs(t, sec, "GET", url+"/v1/leases?prefix=scenes/&limit=100&cursor="+first.Next, "")
	r.wantStatus(t, "scenes token with the admin's cursor", 200)
	var out wire.LeaseList
	r.decode(t, &out)
	for _, l := range out.Leases {
		if !strings.HasPrefix(l.Key, "scenes/") {
			t.Errorf("scenes token listed %q", l.Key)
		}
	}
	doAs(t, sec, "GET", url+"/v1/leases?limit=5&cursor="+first.Next, "").wantDenied(t, "list everything by cursor",
		wire.CodePermissionDenied, `"read"`, `prefix ""`)
}

// GET /v1/groups answers in pages of at most limit groups, ordered by
// name, with the same limit, cursor and next as the lease list.
func TestListGroupsPages(t *testing.T) {
	tn := startNode(t)
	var want []string
	for i := range 7 {
		name := fmt.Sprintf("grp%d", i)
		do(t, http.MethodPut, tn.url+"/v1/groups/"+name, `{"keys":["a"]}`).wantStatus(t, "put "+name, 200)
		want = append(want, name)
	}
	var got []string
	eachPage(t, "", tn.url+"/v1/groups?limit=3", 4, func(page int, r reply) string {
		var out wire.GroupList
		r.decode(t, &out)
		if len(out.Groups) > 3 || out.Index == 0 || r.index(t) != out.Index {
			t.Errorf("page %d: %d groups, index %d (header %d); want at most 3, the same non-zero index", page, len(out.Groups), out.Index, r.index(t))
		}
		for _, g := range out.Groups {
			got = append(got, g.Name)
		}
		return out.Next
	})
	if !slices.Equal(got, want) {
		t.Errorf("group pages listed %q, want %q", got, want)
	}
	r := do(t, http.MethodGet, tn.url+"/v1/groups?limit=0", "")
	r.wantStatus(t, "limit=0", http.StatusBadRequest)
	if e := r.apiErr(t); e.Field != "limit" {
		t.Errorf("limit=0: field %q, want limit", e.Field)
	}
}

// GET /v1/acl/tokens answers in pages, by accessor id, as the other lists.
func TestListACLTokensPages(t *testing.T) {
	e := startACL(t, 1)
	url := e.leader().url
	e.policy(t, "r", rule("", client.RightRead))
	for range 4 {
		e.token(t, client.ACLTokenSpec{Policies: []string{"r"}})
	}
	var got []string
	eachPage(t, e.boot, url+"/v1/acl/tokens?limit=2", 4, func(page int, r reply) string {
		var out client.ACLTokenList
		r.decode(t, &out)
		if len(out.Tokens) > 2 {
			t.Errorf("page %d holds %d tokens, want at most 2", page, len(out.Tokens))
		}
		for _, tk := range out.Tokens {
			if tk.SecretID != "" {
				t.Errorf("token %s listed with its secret", tk.AccessorID)
			}
			got = append(got, tk.AccessorID)
		}
		return out.Next
	})
	if len(got) != 5 || !slices.IsSorted(got) {
		t.Errorf("token pages listed %q, want 5 accessor ids (the bootstrap token and 4) in order", got)
	}
	doAs(t, e.boot, "GET", url+"/v1/acl/tokens?limit=100000", "").wantStatus(t, "limit over the maximum", 400)
}

// GET /v1/groups/{name} pages the group's keys (the workers' counts cover
// every key on every page); its assignment takes limit and cursor too.
func TestGroupViewPages(t *testing.T) {
	tn := startNode(t)
	do(t, http.MethodPut, tn.url+"/v1/groups/g", `{"prefix":"k/","count":25}`).wantStatus(t, "put group", 200)
	var keys []string
	eachPage(t, "", tn.url+"/v1/groups/g?limit=10", 4, func(page int, r reply) string {
		var g client.Group
		r.decode(t, &g)
		if len(g.Keys) > 10 || g.Name != "g" {
			t.Errorf("page %d: group %q with %d keys; want g, at most 10", page, g.Name, len(g.Keys))
		}
		for _, k := range g.Keys {
			keys = append(keys, k.Key)
		}
		return g.Next
	})
	if len(keys) != 25 || !slices.IsSorted(keys) {
		t.Errorf("group pages listed %d keys %q, want 25 in order", len(keys), keys)
	}
	r := do(t, http.MethodGet, tn.url+"/v1/groups/g/assignment?limit=5", "")
	r.wantStatus(t, "assignment page", 200)
	var a client.Assignment
	r.decode(t, &a)
	if a.Group != "g" || a.Next != "" {
		t.Errorf("assignment without workers: %+v, want group g, empty, no next", a)
	}
	for _, path := range []string{"/v1/groups/g?limit=0", "/v1/groups/g/assignment?limit=20000", "/v1/groups/g?cursor=%21"} {
		do(t, http.MethodGet, tn.url+path, "").wantStatus(t, path, http.StatusBadRequest)
	}
}

// GET /v1/workers answers in pages of workers, in id order: following
// next lists every worker once; id= still answers one worker.
func TestListWorkersPages(t *testing.T) {
	tn := startNode(t)
	for _, id := range []string{"w5", "w1", "w3", "w2", "w4"} {
		do(t, "POST", tn.url+"/v1/workers/"+id+"/drain?force=true", "").wantStatus(t, "drain "+id, http.StatusOK)
	}
	var got []string
	eachPage(t, "", tn.url+"/v1/workers?limit=2", 6, func(_ int, r reply) string {
		var out wire.WorkerList
		r.decode(t, &out)
		if len(out.Workers) > 2 {
			t.Fatalf("page of %d workers, want at most 2", len(out.Workers))
		}
		for _, w := range out.Workers {
			got = append(got, w.ID)
		}
		return out.Next
	})
	if strings.Join(got, ",") != "w1,w2,w3,w4,w5" {
		t.Errorf("workers over the pages: %v, want w1..w5 once each in order", got)
	}
	var one wire.WorkerList
	do(t, "GET", tn.url+"/v1/workers?id=w3&limit=1", "").decode(t, &one)
	if len(one.Workers) != 1 || one.Workers[0].ID != "w3" || !one.Workers[0].Drained || one.Next != "" {
		t.Errorf("id=w3: %+v, want w3 (drained) alone", one)
	}
	r := do(t, "GET", tn.url+"/v1/workers?limit=0", "")
	r.wantStatus(t, "limit=0", http.StatusBadRequest)
}
