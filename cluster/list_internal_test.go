package cluster

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
				plan, next := assignmentPage(g, tc.worker, after, limit)
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
