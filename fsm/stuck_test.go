package fsm

import (
	"reflect"
	"testing"
	"time"
)

// TestGroupSettingsAndStuckMarks: the settings of GroupDefine and the
// balancer's stuck marks survive later definitions of the group, a GroupPut
// (the command old servers wrote) clears the settings as it always did,
// and a snapshot carries both.
func TestGroupSettingsAndStuckMarks(t *testing.T) {
	n := newNode(t)
	if r := n.one(MarkStuck{Group: "g", Workers: []string{"w-a"}}); r.Code != NotFound {
		t.Fatalf("MarkStuck of a missing group = %v, want %v", r.Code, NotFound)
	}
	n.one(GroupDefine{Name: "g", Keys: []string{"b", "a"}, StuckGrace: 30 * time.Second, MinWorkers: 2})
	n.one(Assign{Group: "g", Assignment: map[string]string{"a": "w-a", "b": "w-b"}})
	n.one(MarkStuck{Group: "g", Workers: []string{"w-b", "w-a", "w-b"}})
	g := n.m.Group("g")
	if g.StuckGrace != 30*time.Second || g.MinWorkers != 2 || !reflect.DeepEqual(g.Stuck, []string{"w-a", "w-b"}) {
		t.Fatalf("group = %s, want grace 30s, min workers 2, stuck [w-a w-b]", groupString(g))
	}
	if !g.IsStuck("w-b") || g.IsStuck("w-c") {
		t.Errorf("IsStuck(w-b), IsStuck(w-c) = %t, %t; want true, false", g.IsStuck("w-b"), g.IsStuck("w-c"))
	}
	if g.ModifyIndex != n.index {
		t.Errorf("ModifyIndex = %d, want %d (a stuck mark wakes blocking group reads)", g.ModifyIndex, n.index)
	}

	// A snapshot restores the same group.
	restored := restoredFrom(t, n.m.snapshotBytes())
	if got := restored.Group("g"); !reflect.DeepEqual(got, g) {
		t.Errorf("restored group = %s, want %s", groupString(got), groupString(g))
	}

	n.one(GroupDefine{Name: "g", Keys: []string{"a"}, StuckGrace: time.Minute})
	g = n.m.Group("g")
	if g.StuckGrace != time.Minute || g.MinWorkers != 0 || !reflect.DeepEqual(g.Stuck, []string{"w-a", "w-b"}) ||
		!reflect.DeepEqual(g.Assignment, map[string]string{"a": "w-a"}) {
		t.Errorf("after a new definition group = %s, want grace 1m, min workers 0, stuck kept, assignment of a kept", groupString(g))
	}
	n.one(GroupPut{Name: "g", Keys: []string{"a"}})
	if g = n.m.Group("g"); g.StuckGrace != 0 || g.MinWorkers != 0 || len(g.Stuck) != 2 {
		t.Errorf("after GroupPut group = %s, want no settings and the stuck marks kept", groupString(g))
	}
	n.one(MarkStuck{Group: "g"})
	if g = n.m.Group("g"); g.Stuck != nil {
		t.Errorf("after an empty MarkStuck Stuck = %q, want nil", g.Stuck)
	}
}
