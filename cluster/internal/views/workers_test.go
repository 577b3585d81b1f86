package views

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/membership"
	"github.com/tenure-io/tenure/fsm"
)

// machine applies cmds, one entry each, to a new state machine.
func machine(t *testing.T, cmds ...fsm.Command) *fsm.Machine {
	t.Helper()
	m := fsm.New()
	for i, c := range cmds {
		if _, err := m.ApplyLog(&raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: fsm.Encode(c)}); err != nil {
			t.Fatalf("apply %d: %v", i, err)
		}
	}
	return m
}

func worker(id, status string, groups ...string) membership.Member {
	return membership.Member{Name: id, Status: status, Meta: membership.MemberMeta{Role: "worker", ID: id, Groups: groups}}
}

// A worker is known by gossip, the plan, a held lease that names it or a
// drain mark; a key by its lease, its group or its controls.
func TestKnownNamesAndWorkerPages(t *testing.T) {
	m := machine(t,
		fsm.GroupDefine{Name: "g", Keys: []string{"a", "b"}},
		fsm.Acquire{Key: "a", Holder: "h", TTL: 1e9, Metadata: map[string]string{"worker": "w-lease"}},
		fsm.WorkerDrain{Worker: "w-drained", Draining: true},
	)
	members := []membership.Member{worker("w-gossip", "alive", "g")}
	for _, w := range []string{"w-gossip", "w-lease", "w-drained"} {
		if !KnownWorker(m, members, w) {
			t.Errorf("KnownWorker(%q) = false, want true", w)
		}
	}
	if KnownWorker(m, members, "nobody") {
		t.Error("KnownWorker(nobody) = true")
	}
	if !KnownKey(m, "a") || !KnownKey(m, "b") || KnownKey(m, "c") {
		t.Errorf("KnownKey a, b, c = %v, %v, %v; want true, true, false", KnownKey(m, "a"), KnownKey(m, "b"), KnownKey(m, "c"))
	}

	all, next := Workers(m, members, "", "", 0)
	var ids []string
	for _, v := range all {
		ids = append(ids, v.ID+":"+v.Status)
	}
	if got := strings.Join(ids, ","); got != "w-drained:absent,w-gossip:alive,w-lease:absent" || next != "" {
		t.Fatalf("Workers = %s, next %q", got, next)
	}
	if !all[0].Drained || len(all[2].Keys) != 1 || all[2].Keys[0].Holds[0] != "a" {
		t.Errorf("Workers: drained %v, keys of w-lease %+v", all[0].Drained, all[2].Keys)
	}
	page, next := Workers(m, members, "", "w-drained", 1)
	if len(page) != 1 || page[0].ID != "w-gossip" || next != "w-gossip" {
		t.Errorf("page after w-drained = %+v, next %q; want w-gossip, next w-gossip", page, next)
	}
}

// Draining the last live worker of a group that may take keys warns.
func TestDrainWarnings(t *testing.T) {
	m := machine(t, fsm.GroupDefine{Name: "g", Keys: []string{"a"}})
	live := []membership.Member{worker("w1", "alive", "g"), worker("w2", "alive", "g")}
	if w := DrainWarnings(m, live, "w1", nil); len(w) != 0 {
		t.Errorf("with w2 left: %q, want no warning", w)
	}
	if w := DrainWarnings(m, live, "w1", func(worker, group string) bool { return worker != "w2" }); len(w) != 1 || !strings.Contains(w[0], `group "g"`) {
		t.Errorf("with w2 not admitted: %q, want one warning for g", w)
	}
}

// The report counts a group below its minimum and cuts every list at
// MaxHealthItems.
func TestPlacementReport(t *testing.T) {
	m := machine(t, fsm.GroupDefine{Name: "g", Keys: []string{"a"}, MinWorkers: 2})
	groups, _ := m.Groups()
	r := Placement(m, groups, nil, nil, nil, []membership.Member{worker("w1", "alive", "g")}, nil, nil, 0)
	if len(r.BelowMin) != 1 || r.BelowMin[0].Workers != 1 || r.OK() {
		t.Errorf("report %+v: want g below its minimum (1 of 2)", r)
	}
	long := make([]int, MaxHealthItems+1)
	if s, cut := truncate(long, false); len(s) != MaxHealthItems || !cut {
		t.Errorf("truncate: %d items, cut %v", len(s), cut)
	}
}

// The report sums up each group with what names the cause of unowned
// keys (live workers, the room they have, the keys disabled or that
// prohibit holders), and lists the keys an operator controls.
func TestPlacementReportSumsUpGroups(t *testing.T) {
	keys := []string{"p/0", "p/1", "p/2", "p/3", "p/4", "p/5"}
	m := machine(t,
		fsm.GroupDefine{Name: "p", Keys: keys, MaxPerWorker: 2, MinWorkers: 3},
		fsm.Assign{Group: "p", Assignment: map[string]string{"p/0": "w1", "p/1": "w1", "p/2": "w2"}},
		fsm.MarkStuck{Group: "p", Workers: []string{"w3"}},
		fsm.SetKeyControl{Key: "p/5", Control: fsm.KeyControl{Disabled: true}},
		fsm.SetKeyControl{Key: "p/4", Control: fsm.KeyControl{Prohibited: []string{"w2"}}},
		fsm.WorkerDrain{Worker: "w4", Draining: true},
		fsm.Acquire{Key: "p/0", Holder: "w1#a", TTL: 10 * time.Second},
		fsm.Acquire{Key: "p/3", Holder: "someone", TTL: 10 * time.Second}, // owned, though the plan targets nobody
	)
	groups, _ := m.Groups()
	w1, w2 := worker("w1", "alive", "p"), worker("w2", "alive", "p")
	w1.Meta.Capacity = 1 // below the group's max per worker: capacity bounds it
	workers := []membership.Member{w1, w2, w2, worker("w3", "alive", "p"), worker("w4", "alive", "p"),
		worker("w5", "alive", "p"), worker("w6", "alive", "other")}
	admit := func(worker, group string) bool { return worker != "w5" }
	r := Placement(m, groups, nil, nil, nil, workers, admit, nil, 0)
	want := GroupHealth{Group: "p", Keys: 6, DisabledKeys: 1, ProhibitedKeys: 1, UnownedKeys: 3, UnplannedKeys: 1,
		LiveWorkers: 5, Workers: 2, Draining: 1, Stuck: 1, NotAdmitted: 1, MinWorkers: 3, MaxPerWorker: 2,
		Room: 3, RoomMin: 1, RoomMax: 2}
	if len(r.Groups) != 1 || !reflect.DeepEqual(r.Groups[0], want) {
		t.Errorf("groups = %+v\nwant [%+v]", r.Groups, want)
	}
	wantCtl := []ControlledKey{{Group: "p", Key: "p/4", Prohibited: []string{"w2"}}, {Group: "p", Key: "p/5", Disabled: true}}
	if !reflect.DeepEqual(r.Controlled, wantCtl) {
		t.Errorf("controlled = %+v, want %+v", r.Controlled, wantCtl)
	}
	if len(r.BelowMin) != 1 || r.BelowMin[0].Workers != 2 {
		t.Errorf("below min = %+v, want p with 2 workers", r.BelowMin)
	}
	if r.OK() {
		t.Errorf("report OK with a group below its minimum")
	}
}
