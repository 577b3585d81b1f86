package views

import (
	"fmt"
	"maps"
	"testing"

	"github.com/tenure-io/tenure/fsm"
)

// A group's plan reads by pages of keys: every target once, in key order,
// only the named worker's when one is named.
func TestAssignmentPage(t *testing.T) {
	g := &fsm.Group{Name: "g", Assignment: map[string]string{}}
	want := map[string]string{}
	wantW1 := map[string]string{}
	for i := range 50 {
		k := fmt.Sprintf("k/%02d", i)
		g.Keys = append(g.Keys, k)
		if i%5 == 4 {
			continue // no target
		}
		w := fmt.Sprintf("w%d", i%3)
		g.Assignment[k] = w
		want[k] = w
		if w == "w1" {
			wantW1[k] = w
		}
	}
	for _, tc := range []struct {
		worker string
		want   map[string]string
	}{{"", want}, {"w1", wantW1}, {"nobody", map[string]string{}}} {
		for _, limit := range []int{1, 4, 100} {
			got := map[string]string{}
			after := ""
			for pages := 1; ; pages++ {
				if pages > 60 {
					t.Fatalf("worker %q, limit %d: the listing did not end", tc.worker, limit)
				}
				plan, next, _ := AssignmentPage(g, tc.worker, after, limit, nil)
				if len(plan) > limit {
					t.Fatalf("worker %q: a page of %d targets, limit %d", tc.worker, len(plan), limit)
				}
				for k, w := range plan {
					if _, dup := got[k]; dup || k <= after {
						t.Fatalf("worker %q, limit %d: key %q listed twice or before the cursor %q", tc.worker, limit, k, after)
					}
					got[k] = w
				}
				if next == "" {
					break
				}
				after = next
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("worker %q, limit %d: pages gave %v, want %v", tc.worker, limit, got, tc.want)
			}
		}
	}
}

// Keys the reader may not see are left out of every page and counted:
// the pages together list exactly the visible targets, and their hidden
// counts add up to the others.
func TestAssignmentPageHidesKeys(t *testing.T) {
	g := &fsm.Group{Name: "g", Assignment: map[string]string{}}
	want := map[string]string{}
	hiddenWant := 0
	for i := range 40 {
		k := fmt.Sprintf("k/%02d", i)
		g.Keys = append(g.Keys, k)
		g.Assignment[k] = "w1"
		if i%3 == 0 {
			hiddenWant++
		} else {
			want[k] = "w1"
		}
	}
	visible := func(k string) bool { var i int; fmt.Sscanf(k, "k/%d", &i); return i%3 != 0 }
	for _, limit := range []int{1, 7, 100} {
		got, hidden, after := map[string]string{}, 0, ""
		for pages := 1; ; pages++ {
			if pages > 50 {
				t.Fatalf("limit %d: the listing did not end", limit)
			}
			plan, next, h := AssignmentPage(g, "", after, limit, visible)
			hidden += h
			maps.Copy(got, plan)
			if next == "" {
				break
			}
			after = next
		}
		if !maps.Equal(got, want) || hidden != hiddenWant {
			t.Errorf("limit %d: pages gave %v and %d hidden, want %v and %d", limit, got, hidden, want, hiddenWant)
		}
	}
}
