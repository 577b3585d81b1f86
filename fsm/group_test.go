package fsm

import (
	"bytes"
	"fmt"
	"github.com/hashicorp/raft"
	"reflect"
	"testing"
)

// TestApplyPlacementContract checks each placement command against a known
// state: setup is applied at indexes 1…n, cmd at n+1; want is the code, and
// groups, controls, drained and index the whole placement state afterwards.
func TestApplyPlacementContract(t *testing.T) {
	tests := []struct {
		name     string
		setup    []Command
		cmd      Command
		want     Code
		groups   []*Group
		controls map[string]KeyControl
		drained  []string
		index    uint64 // GroupIndex afterwards
	}{
		// Warm hand-off: Assign's Prepare and Prepared.
		{
			name:   "assign names the workers that prepare, dropping a key's own target and unknown keys",
			setup:  []Command{GroupPut{Name: "g", Keys: []string{"a", "b", "c"}}},
			cmd:    Assign{Group: "g", Assignment: map[string]string{"a": "w1", "b": "w1"}, Prepare: map[string]string{"a": "w2", "b": "w1", "z": "w2", "c": "w3"}},
			want:   Done,
			groups: []*Group{{Name: "g", Keys: []string{"a", "b", "c"}, Assignment: map[string]string{"a": "w1", "b": "w1"}, Prepare: map[string]string{"a": "w2", "c": "w3"}, CreateIndex: 1, ModifyIndex: 2, AssignIndex: 2}},
			index:  2,
		},
		{
			name: "prepared targets the keys still prepared for that worker, and only those",
			setup: []Command{GroupPut{Name: "g", Keys: []string{"a", "b", "c"}},
				Assign{Group: "g", Assignment: map[string]string{"a": "w1", "b": "w1", "c": "w1"}, Prepare: map[string]string{"a": "w2", "b": "w3"}}},
			cmd:    Prepared{Group: "g", Worker: "w2", Keys: []string{"a", "b", "c"}},
			want:   Done,
			groups: []*Group{{Name: "g", Keys: []string{"a", "b", "c"}, Assignment: map[string]string{"a": "w2", "b": "w1", "c": "w1"}, Prepare: map[string]string{"b": "w3"}, CreateIndex: 1, ModifyIndex: 3, AssignIndex: 3}},
			index:  3,
		},
		{
			name: "a stale prepared changes nothing",
			setup: []Command{GroupPut{Name: "g", Keys: []string{"a"}},
				Assign{Group: "g", Assignment: map[string]string{"a": "w1"}, Prepare: map[string]string{"a": "w2"}},
				Assign{Group: "g", Assignment: map[string]string{"a": "w1"}}},
			cmd:    Prepared{Group: "g", Worker: "w2", Keys: []string{"a"}},
			want:   Done,
			groups: []*Group{{Name: "g", Keys: []string{"a"}, Assignment: map[string]string{"a": "w1"}, CreateIndex: 1, ModifyIndex: 3, AssignIndex: 3}},
			index:  3,
		},
		{
			name: "a plan made before a worker's prepared is refused",
			setup: []Command{GroupPut{Name: "g", Keys: []string{"a"}},
				Assign{Group: "g", Assignment: map[string]string{"a": "w1"}, Prepare: map[string]string{"a": "w2"}},
				Prepared{Group: "g", Worker: "w2", Keys: []string{"a"}}},
			cmd:    Assign{Group: "g", Assignment: map[string]string{"a": "w1"}, Prepare: map[string]string{"a": "w2"}, Base: 2},
			want:   CASFailed,
			groups: []*Group{{Name: "g", Keys: []string{"a"}, Assignment: map[string]string{"a": "w2"}, CreateIndex: 1, ModifyIndex: 3, AssignIndex: 3}},
			index:  3,
		},
		{
			name: "a plan made on the current assignment applies",
			setup: []Command{GroupPut{Name: "g", Keys: []string{"a"}},
				Assign{Group: "g", Assignment: map[string]string{"a": "w1"}, Prepare: map[string]string{"a": "w2"}}},
			cmd:    Assign{Group: "g", Assignment: map[string]string{"a": "w2"}, Base: 2},
			want:   Done,
			groups: []*Group{{Name: "g", Keys: []string{"a"}, Assignment: map[string]string{"a": "w2"}, CreateIndex: 1, ModifyIndex: 3, AssignIndex: 3}},
			index:  3,
		},
		{
			name: "a drained worker's prepared changes nothing",
			setup: []Command{GroupPut{Name: "g", Keys: []string{"a"}},
				Assign{Group: "g", Assignment: map[string]string{"a": "w1"}, Prepare: map[string]string{"a": "w2"}},
				WorkerDrain{Worker: "w2", Draining: true}},
			cmd:     Prepared{Group: "g", Worker: "w2", Keys: []string{"a"}},
			want:    Done,
			groups:  []*Group{{Name: "g", Keys: []string{"a"}, Assignment: map[string]string{"a": "w1"}, Prepare: map[string]string{"a": "w2"}, CreateIndex: 1, ModifyIndex: 2, AssignIndex: 2}},
			drained: []string{"w2"},
			index:   3,
		},
		{
			name:  "prepared of a missing group",
			cmd:   Prepared{Group: "g", Worker: "w2", Keys: []string{"a"}},
			want:  NotFound,
			index: 0,
		},
		{
			name: "keys that leave a group leave its prepares",
			setup: []Command{GroupPut{Name: "g", Keys: []string{"a", "b"}},
				Assign{Group: "g", Assignment: map[string]string{"a": "w1", "b": "w1"}, Prepare: map[string]string{"a": "w2", "b": "w2"}}},
			cmd:    GroupSetKeys{Name: "g", Keys: []string{"b"}},
			want:   Done,
			groups: []*Group{{Name: "g", Keys: []string{"b"}, Assignment: map[string]string{"b": "w1"}, Prepare: map[string]string{"b": "w2"}, CreateIndex: 1, ModifyIndex: 3, AssignIndex: 2}},
			index:  3,
		},
		// GroupBalance.
		{
			name:   "group balance sets the balance, weights and all",
			setup:  []Command{GroupPut{Name: "g", Keys: []string{"a", "b"}}},
			cmd:    GroupBalance{Name: "g", Balance: Balance{ByLoad: true, Threshold: 1.2, MoveBudget: 4, MoveInterval: 30e9, Weights: map[string]float64{"a": 2}}},
			want:   Done,
			groups: []*Group{{Name: "g", Keys: []string{"a", "b"}, Balance: &Balance{ByLoad: true, Threshold: 1.2, MoveBudget: 4, MoveInterval: 30e9, Weights: map[string]float64{"a": 2}}, CreateIndex: 1, ModifyIndex: 2}},
			index:  2,
		},
		{
			name:   "a group replaced keeps its balance",
			setup:  []Command{GroupPut{Name: "g", Keys: []string{"a"}}, GroupBalance{Name: "g", Balance: Balance{ByLoad: true, Threshold: 2}}},
			cmd:    GroupDefine{Name: "g", Keys: []string{"a", "b"}, MinWorkers: 1},
			want:   Done,
			groups: []*Group{{Name: "g", Keys: []string{"a", "b"}, MinWorkers: 1, Balance: &Balance{ByLoad: true, Threshold: 2}, CreateIndex: 1, ModifyIndex: 3}},
			index:  3,
		},
		{
			name:   "group balance by count without weights is no balance",
			setup:  []Command{GroupPut{Name: "g", Keys: []string{"a"}}, GroupBalance{Name: "g", Balance: Balance{ByLoad: true, Threshold: 2}}},
			cmd:    GroupBalance{Name: "g", Balance: Balance{Threshold: 2}},
			want:   Done,
			groups: []*Group{{Name: "g", Keys: []string{"a"}, CreateIndex: 1, ModifyIndex: 3}},
			index:  3,
		},
		{
			name:   "group balance by count with an availability budget is kept",
			setup:  []Command{GroupPut{Name: "g", Keys: []string{"a"}}},
			cmd:    GroupBalance{Name: "g", Balance: Balance{MaxMoving: 4}},
			want:   Done,
			groups: []*Group{{Name: "g", Keys: []string{"a"}, Balance: &Balance{MaxMoving: 4}, CreateIndex: 1, ModifyIndex: 2}},
			index:  2,
		},
		{
			name:  "group balance of a missing group",
			cmd:   GroupBalance{Name: "g", Balance: Balance{ByLoad: true}},
			want:  NotFound,
			index: 0,
		},
		// GroupPut.
		{
			name:   "group put creates a group with sorted, distinct keys",
			cmd:    GroupPut{Name: "g", Keys: []string{"c", "a", "b", "a"}, MaxPerWorker: 3},
			want:   Done,
			groups: []*Group{{Name: "g", Keys: []string{"a", "b", "c"}, MaxPerWorker: 3, CreateIndex: 1, ModifyIndex: 1}},
			index:  1,
		},
		{
			name:   "group put without keys creates an empty group",
			cmd:    GroupPut{Name: "g"},
			want:   Done,
			groups: []*Group{{Name: "g", CreateIndex: 1, ModifyIndex: 1}},
			index:  1,
		},
		{
			name: "group put replaces keys and bound and keeps the assignment of the keys that stay",
			setup: []Command{
				GroupPut{Name: "g", Keys: []string{"a", "b", "c"}, MaxPerWorker: 1},
				Assign{Group: "g", Assignment: map[string]string{"a": "w1", "b": "w2", "c": "w1"}},
			},
			cmd:  GroupPut{Name: "g", Keys: []string{"d", "c", "a"}, MaxPerWorker: 2},
			want: Done,
			groups: []*Group{{Name: "g", Keys: []string{"a", "c", "d"}, MaxPerWorker: 2,
				Assignment: map[string]string{"a": "w1", "c": "w1"}, CreateIndex: 1, ModifyIndex: 3, AssignIndex: 2}},
			index: 3,
		},
		{
			name: "group put without keys drops the whole assignment",
			setup: []Command{
				GroupPut{Name: "g", Keys: []string{"a", "b"}},
				Assign{Group: "g", Assignment: map[string]string{"a": "w1", "b": "w2"}},
			},
			cmd:    GroupPut{Name: "g"},
			want:   Done,
			groups: []*Group{{Name: "g", CreateIndex: 1, ModifyIndex: 3, AssignIndex: 2}},
			index:  3,
		},
		{
			name:  "group put of a second group leaves the first alone; groups are ordered by name",
			setup: []Command{GroupPut{Name: "m", Keys: []string{"a"}}},
			cmd:   GroupPut{Name: "b", Keys: []string{"a"}},
			want:  Done,
			groups: []*Group{
				{Name: "b", Keys: []string{"a"}, CreateIndex: 2, ModifyIndex: 2},
				{Name: "m", Keys: []string{"a"}, CreateIndex: 1, ModifyIndex: 1},
			},
			index: 2,
		},
		{
			name: "group put after a delete starts a new group",
			setup: []Command{
				GroupPut{Name: "g", Keys: []string{"a"}, MaxPerWorker: 4},
				Assign{Group: "g", Assignment: map[string]string{"a": "w1"}},
				GroupDelete{Name: "g"},
			},
			cmd:    GroupPut{Name: "g", Keys: []string{"a"}},
			want:   Done,
			groups: []*Group{{Name: "g", Keys: []string{"a"}, CreateIndex: 4, ModifyIndex: 4}},
			index:  4,
		},

		// GroupDelete.
		{
			name:   "group delete removes the group",
			setup:  []Command{GroupPut{Name: "a"}, GroupPut{Name: "g", Keys: []string{"k"}}},
			cmd:    GroupDelete{Name: "g"},
			want:   Done,
			groups: []*Group{{Name: "a", CreateIndex: 1, ModifyIndex: 1}},
			index:  3,
		},
		{
			name:    "group delete of a missing group is not found and changes nothing",
			setup:   []Command{GroupPut{Name: "a"}, WorkerDrain{Worker: "w1", Draining: true}},
			cmd:     GroupDelete{Name: "g"},
			want:    NotFound,
			groups:  []*Group{{Name: "a", CreateIndex: 1, ModifyIndex: 1}},
			drained: []string{"w1"},
			index:   2,
		},
		{
			name:  "group delete leaves the leases of its keys alone",
			setup: []Command{acquire("k", "w1"), GroupPut{Name: "g", Keys: []string{"k"}}, Assign{Group: "g", Assignment: map[string]string{"k": "w1"}}},
			cmd:   GroupDelete{Name: "g"},
			want:  Done,
			index: 4,
		},

		// GroupSetKeys.
		{
			name: "group set keys adds and removes in one entry; staying keys keep their targets",
			setup: []Command{
				GroupPut{Name: "g", Keys: []string{"b", "d"}, MaxPerWorker: 5},
				Assign{Group: "g", Assignment: map[string]string{"b": "w1", "d": "w2"}},
			},
			cmd:  GroupSetKeys{Name: "g", Keys: []string{"c", "a", "c", "b"}},
			want: Done,
			groups: []*Group{{Name: "g", Keys: []string{"a", "b", "c"}, MaxPerWorker: 5,
				Assignment: map[string]string{"b": "w1"}, CreateIndex: 1, ModifyIndex: 3, AssignIndex: 2}},
			index: 3,
		},
		{
			name: "group set keys to the keys the group has changes nothing, its index neither",
			setup: []Command{
				GroupPut{Name: "g", Keys: []string{"a", "b"}},
				Assign{Group: "g", Assignment: map[string]string{"a": "w1"}},
			},
			cmd:  GroupSetKeys{Name: "g", Keys: []string{"b", "a", "b"}},
			want: Done,
			groups: []*Group{{Name: "g", Keys: []string{"a", "b"}, Assignment: map[string]string{"a": "w1"},
				CreateIndex: 1, ModifyIndex: 2, AssignIndex: 2}},
			index: 2,
		},
		{
			name:   "group set keys to none leaves an empty group",
			setup:  []Command{GroupPut{Name: "g", Keys: []string{"a", "b"}}},
			cmd:    GroupSetKeys{Name: "g"},
			want:   Done,
			groups: []*Group{{Name: "g", CreateIndex: 1, ModifyIndex: 2}},
			index:  2,
		},
		{
			name: "group set keys of a missing group",
			cmd:  GroupSetKeys{Name: "g", Keys: []string{"a"}},
			want: NotFound,
		},
		// GroupKeys.
		{
			name: "group keys adds sorted, distinct keys and removes keys with their assignment",
			setup: []Command{
				GroupPut{Name: "g", Keys: []string{"b", "d"}, MaxPerWorker: 5},
				Assign{Group: "g", Assignment: map[string]string{"b": "w1", "d": "w2"}},
			},
			cmd:  GroupKeys{Name: "g", Add: []string{"c", "a", "c", "b"}, Remove: []string{"d", "not-a-member"}},
			want: Done,
			groups: []*Group{{Name: "g", Keys: []string{"a", "b", "c"}, MaxPerWorker: 5,
				Assignment: map[string]string{"b": "w1"}, CreateIndex: 1, ModifyIndex: 3, AssignIndex: 2}},
			index: 3,
		},
		{
			name:   "a key both added and removed is removed",
			setup:  []Command{GroupPut{Name: "g", Keys: []string{"a"}}},
			cmd:    GroupKeys{Name: "g", Add: []string{"b"}, Remove: []string{"b"}},
			want:   Done,
			groups: []*Group{{Name: "g", Keys: []string{"a"}, CreateIndex: 1, ModifyIndex: 2}},
			index:  2,
		},
		{
			name: "group keys that removes every key leaves an empty group",
			setup: []Command{
				GroupPut{Name: "g", Keys: []string{"a", "b"}},
				Assign{Group: "g", Assignment: map[string]string{"a": "w1"}},
			},
			cmd:    GroupKeys{Name: "g", Remove: []string{"b", "a"}},
			want:   Done,
			groups: []*Group{{Name: "g", CreateIndex: 1, ModifyIndex: 3, AssignIndex: 2}},
			index:  3,
		},
		{
			name:   "group keys of a missing group is not found and changes nothing",
			setup:  []Command{GroupPut{Name: "a", Keys: []string{"k"}}, GroupPut{Name: "g"}, GroupDelete{Name: "g"}},
			cmd:    GroupKeys{Name: "g", Add: []string{"k"}},
			want:   NotFound,
			groups: []*Group{{Name: "a", Keys: []string{"k"}, CreateIndex: 1, ModifyIndex: 1}},
			index:  3,
		},

		// Assign.
		{
			name: "assign replaces the assignment, ignores keys outside the group and moves the assign index",
			setup: []Command{
				GroupPut{Name: "g", Keys: []string{"a", "b", "c"}},
				Assign{Group: "g", Assignment: map[string]string{"a": "w1", "b": "w1"}},
			},
			cmd:  Assign{Group: "g", Assignment: map[string]string{"b": "w2", "c": "w3", "x": "w4"}},
			want: Done,
			groups: []*Group{{Name: "g", Keys: []string{"a", "b", "c"},
				Assignment: map[string]string{"b": "w2", "c": "w3"}, CreateIndex: 1, ModifyIndex: 3, AssignIndex: 3}},
			index: 3,
		},
		{
			name:  "assign to no worker leaves the key without an owner",
			setup: []Command{GroupPut{Name: "g", Keys: []string{"a", "b"}}},
			cmd:   Assign{Group: "g", Assignment: map[string]string{"a": "", "b": "w1"}},
			want:  Done,
			groups: []*Group{{Name: "g", Keys: []string{"a", "b"},
				Assignment: map[string]string{"b": "w1"}, CreateIndex: 1, ModifyIndex: 2, AssignIndex: 2}},
			index: 2,
		},
		{
			name: "an empty assign clears the assignment",
			setup: []Command{
				GroupPut{Name: "g", Keys: []string{"a"}},
				Assign{Group: "g", Assignment: map[string]string{"a": "w1"}},
			},
			cmd:    Assign{Group: "g"},
			want:   Done,
			groups: []*Group{{Name: "g", Keys: []string{"a"}, CreateIndex: 1, ModifyIndex: 3, AssignIndex: 3}},
			index:  3,
		},
		{
			name:   "assign of only keys outside the group assigns nothing",
			setup:  []Command{GroupPut{Name: "g", Keys: []string{"a"}}},
			cmd:    Assign{Group: "g", Assignment: map[string]string{"b": "w1"}},
			want:   Done,
			groups: []*Group{{Name: "g", Keys: []string{"a"}, CreateIndex: 1, ModifyIndex: 2, AssignIndex: 2}},
			index:  2,
		},
		{
			name:   "assign of a missing group is not found and changes nothing",
			setup:  []Command{GroupPut{Name: "a", Keys: []string{"k"}}},
			cmd:    Assign{Group: "g", Assignment: map[string]string{"k": "w1"}},
			want:   NotFound,
			groups: []*Group{{Name: "a", Keys: []string{"k"}, CreateIndex: 1, ModifyIndex: 1}},
			index:  1,
		},

		// SetKeyControl.
		{
			name:     "a key is disabled",
			cmd:      SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}},
			want:     Done,
			controls: map[string]KeyControl{"a": {Disabled: true}},
			index:    1,
		},
		{
			name:     "prohibited holders are stored sorted and distinct",
			cmd:      SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w3", "w1", "w3"}}},
			want:     Done,
			controls: map[string]KeyControl{"a": {Prohibited: []string{"w1", "w3"}}},
			index:    1,
		},
		{
			name: "a control replaces the key's previous control",
			setup: []Command{
				SetKeyControl{Key: "a", Control: KeyControl{Disabled: true, Prohibited: []string{"w1"}}},
				SetKeyControl{Key: "b", Control: KeyControl{Disabled: true}},
			},
			cmd:      SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w2"}}},
			want:     Done,
			controls: map[string]KeyControl{"a": {Prohibited: []string{"w2"}}, "b": {Disabled: true}},
			index:    3,
		},
		{
			name: "an empty control removes the key's control",
			setup: []Command{
				SetKeyControl{Key: "a", Control: KeyControl{Disabled: true, Prohibited: []string{"w1"}}},
				SetKeyControl{Key: "b", Control: KeyControl{Disabled: true}},
			},
			cmd:      SetKeyControl{Key: "a"},
			want:     Done,
			controls: map[string]KeyControl{"b": {Disabled: true}},
			index:    3,
		},
		{
			name:     "an empty list of prohibited holders is no control",
			setup:    []Command{SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w1"}}}},
			cmd:      SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{}}},
			want:     Done,
			controls: map[string]KeyControl{},
			index:    2,
		},

		// WorkerDrain.
		{
			name:    "a worker is drained; drained workers are sorted",
			setup:   []Command{WorkerDrain{Worker: "w3", Draining: true}},
			cmd:     WorkerDrain{Worker: "w1", Draining: true},
			want:    Done,
			drained: []string{"w1", "w3"},
			index:   2,
		},
		{
			name:    "draining twice leaves one mark",
			setup:   []Command{WorkerDrain{Worker: "w1", Draining: true}},
			cmd:     WorkerDrain{Worker: "w1", Draining: true},
			want:    Done,
			drained: []string{"w1"},
			index:   2,
		},
		{
			name:    "undraining removes the mark",
			setup:   []Command{WorkerDrain{Worker: "w1", Draining: true}, WorkerDrain{Worker: "w2", Draining: true}},
			cmd:     WorkerDrain{Worker: "w1"},
			want:    Done,
			drained: []string{"w2"},
			index:   3,
		},

		// Placement commands in a batch: asserted in TestApplyPlacementBatch.
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			n.all(tt.setup...)
			leasesBefore, leaseIndexBefore, tokenBefore := leaseState(n.m)
			before := placementOf(n.m)

			got := n.one(tt.cmd)

			if got.Code != tt.want {
				t.Errorf("code = %v, want %v", got.Code, tt.want)
			}
			if got.Lease != nil {
				t.Errorf("lease = %s, want none: placement commands have no lease outcome", leaseString(got.Lease))
			}
			want := placement{Groups: tt.groups, Controls: tt.controls, Drained: tt.drained, Index: tt.index}
			if want.Groups == nil {
				want.Groups = []*Group{}
			}
			if want.Controls == nil {
				want.Controls = map[string]KeyControl{}
			}
			if want.Drained == nil {
				want.Drained = []string{}
			}
			after := placementOf(n.m)
			assertPlacement(t, n.m, after, want)
			if diff := diffPlacement(after, before); got.Code == NotFound && diff != "" {
				t.Errorf("%v changed the placement:\n%s", got.Code, diff)
			}

			// Placement commands never touch leases or tokens.
			leasesAfter, leaseIndexAfter, tokenAfter := leaseState(n.m)
			if !reflect.DeepEqual(leasesAfter, leasesBefore) || leaseIndexAfter != leaseIndexBefore || tokenAfter != tokenBefore {
				t.Errorf("%T changed the leases: lease index %d → %d, last token %d → %d",
					tt.cmd, leaseIndexBefore, leaseIndexAfter, tokenBefore, tokenAfter)
			}
		})
	}
}

// assertPlacement compares got (placementOf(m)) with want, and checks that
// the single-item reads of m agree with it.
func assertPlacement(t *testing.T, m *Machine, got, want placement) {
	t.Helper()
	if diff := diffPlacement(got, want); diff != "" {
		t.Errorf("placement differs:\n%s", diff)
	}
	if gi := m.GroupIndex(); gi != want.Index {
		t.Errorf("GroupIndex() = %d, want %d", gi, want.Index)
	}
	for _, g := range want.Groups {
		if got := m.Group(g.Name); !reflect.DeepEqual(got, g) {
			t.Errorf("Group(%q) = %s, want %s", g.Name, groupString(got), groupString(g))
		}
	}
	if g := m.Group("no-such-group"); g != nil {
		t.Errorf("Group(no-such-group) = %s, want nil", groupString(g))
	}
	for key, c := range want.Controls {
		if got := m.Control(key); !reflect.DeepEqual(got, c) {
			t.Errorf("Control(%q) = %+v, want %+v", key, got, c)
		}
	}
	if c := m.Control("no-such-key"); !reflect.DeepEqual(c, KeyControl{}) {
		t.Errorf("Control(no-such-key) = %+v, want the zero control", c)
	}
	for _, w := range want.Drained {
		if !m.Drained(w) {
			t.Errorf("Drained(%q) = false, want true", w)
		}
	}
	if m.Drained("no-such-worker") {
		t.Error("Drained(no-such-worker) = true, want false")
	}
}

// TestApplyPlacementBatch: placement commands in one batch apply in order,
// each with its own result, and share the batch's index.
func TestApplyPlacementBatch(t *testing.T) {
	n := newNode(t)
	n.one(acquire("a", "w0"))
	results := n.batch(
		GroupPut{Name: "g", Keys: []string{"a", "b"}},
		Assign{Group: "g", Assignment: map[string]string{"a": "w1", "b": "w2"}},
		GroupKeys{Name: "g", Remove: []string{"b"}},
		GroupKeys{Name: "missing", Add: []string{"c"}},
		SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}},
		acquire("a", "w1"),
		Release{Key: "a", Holder: "w0", Token: 1},
		acquire("a", "w1"),
		SetKeyControl{Key: "a"},
		acquire("a", "w1"),
		WorkerDrain{Worker: "w2", Draining: true},
	)

	got := make([]Code, len(results))
	for i, r := range results {
		got[i] = r.Code
	}
	wantCodes := []Code{Done, Done, Done, NotFound, Done, Disabled, Freed, Disabled, Done, Granted, Done}
	if !reflect.DeepEqual(got, wantCodes) {
		t.Errorf("codes = %v, want %v", got, wantCodes)
	}
	want := placement{
		Groups: []*Group{{Name: "g", Keys: []string{"a"}, Assignment: map[string]string{"a": "w1"},
			CreateIndex: 2, ModifyIndex: 2, AssignIndex: 2}},
		Controls: map[string]KeyControl{},
		Drained:  []string{"w2"},
		Index:    2,
	}
	assertPlacement(t, n.m, placementOf(n.m), want)
	if l := n.m.Get("a"); l.Holder != "w1" || l.Token != 2 || !l.Held {
		t.Errorf("Get(a) = %s, want held by w1 under token 2", leaseString(l))
	}
}

// TestGroupIndex checks the index that placement reads report: it moves
// with every entry that changes a group, a key control or a drain mark,
// and with nothing else; the lease index ignores placement commands.
func TestGroupIndex(t *testing.T) {
	n := newNode(t)
	steps := []struct {
		cmd               Command
		group, leaseIndex uint64
	}{
		{acquire("a", "w1"), 0, 1},
		{GroupPut{Name: "g", Keys: []string{"a"}}, 2, 1},
		{acquire("b", "w1"), 2, 3},
		{Assign{Group: "g", Assignment: map[string]string{"a": "w1"}}, 4, 3},
		{GroupKeys{Name: "missing"}, 4, 3},
		{SetKeyControl{Key: "b", Control: KeyControl{Disabled: true}}, 6, 6}, // b's lease is ending
		{acquire("b", "w2"), 6, 6},                                           // disabled
		{WorkerDrain{Worker: "w1", Draining: true}, 8, 6},
		{Revoke{Key: "a"}, 8, 9},
		{GroupDelete{Name: "missing"}, 8, 9},
		{Assign{Group: "missing"}, 8, 9},
		{GroupKeys{Name: "g", Add: []string{"b"}}, 12, 9},
		{GroupDelete{Name: "g"}, 13, 9},
		{LeaderEstablished{Term: 2}, 13, 9},
	}
	for _, s := range steps {
		n.applyRaw(Encode(s.cmd))
		_, _, lease := n.m.Indexes()
		_, listed := n.m.Groups()
		if got := n.m.GroupIndex(); got != s.group || listed != s.group || lease != s.leaseIndex {
			t.Errorf("after %T at index %d: GroupIndex() = %d, Groups() index = %d, lease index = %d; want %d, %d, %d",
				s.cmd, n.index, got, listed, lease, s.group, s.group, s.leaseIndex)
		}
	}
}

// TestGroupsHandedOutAreNotModified: like leases, the groups and controls a
// reader (the HTTP layer, the balancer, a snapshot in progress) holds stay
// as they were read while Apply goes on.
func TestGroupsHandedOutAreNotModified(t *testing.T) {
	n := newNode(t)
	n.all(
		GroupPut{Name: "g", Keys: []string{"a", "b", "c"}, MaxPerWorker: 2},
		Assign{Group: "g", Assignment: map[string]string{"a": "w1", "b": "w2", "c": "w1"}},
		SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w1", "w2"}}},
	)
	read := n.m.Group("g")
	listed, _ := n.m.Groups()
	ctl := n.m.Control("a")
	wantGroup, wantCtl := cloneGroup(read), KeyControl{Prohibited: []string{"w1", "w2"}}
	snap, err := n.m.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	t.Cleanup(snap.Release)
	wantSnap := n.m.snapshotBytes()

	n.all(
		Assign{Group: "g", Assignment: map[string]string{"a": "w3", "b": "w3"}},
		GroupKeys{Name: "g", Add: []string{"d"}, Remove: []string{"a"}},
		GroupPut{Name: "g", Keys: []string{"b", "z"}, MaxPerWorker: 9},
		Assign{Group: "g", Assignment: map[string]string{"b": "w9", "z": "w9"}},
		SetKeyControl{Key: "a", Control: KeyControl{Disabled: true, Prohibited: []string{"w0"}}},
		SetKeyControl{Key: "a"},
		GroupDelete{Name: "g"},
	)

	for name, g := range map[string]*Group{"Group(g)": read, "Groups()[0]": listed[0]} {
		if !reflect.DeepEqual(g, wantGroup) {
			t.Errorf("%s changed under the caller:\n  %s\nwant\n  %s", name, groupString(g), groupString(wantGroup))
		}
	}
	if !reflect.DeepEqual(ctl, wantCtl) {
		t.Errorf("Control(a) changed under the caller: %+v, want %+v", ctl, wantCtl)
	}
	sink := &fakeSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatalf("Persist: %v", err)
	}
	if got := sink.Bytes(); !bytes.Equal(got, wantSnap) {
		t.Errorf("Persist wrote the placement after later Applies:\n got %x\nwant %x", got, wantSnap)
	}
}

// TestGroupNamesAndKeysAreNotInterpreted: group names, keys and workers are
// opaque strings; nothing in the state machine validates or rewrites them.
func TestGroupNamesAndKeysAreNotInterpreted(t *testing.T) {
	odd := []string{"", " ", "ünïcødé ✓", "a/b", "\x00"}
	for i, s := range odd {
		t.Run(fmt.Sprintf("string %d", i), func(t *testing.T) {
			n := newNode(t)
			n.all(
				GroupPut{Name: s, Keys: []string{s}},
				Assign{Group: s, Assignment: map[string]string{s: "w" + s}},
				SetKeyControl{Key: s, Control: KeyControl{Prohibited: []string{s}}},
				WorkerDrain{Worker: s, Draining: true},
			)
			want := &Group{Name: s, Keys: []string{s}, Assignment: map[string]string{s: "w" + s}, CreateIndex: 1, ModifyIndex: 2, AssignIndex: 2}
			if got := n.m.Group(s); !reflect.DeepEqual(got, want) {
				t.Errorf("Group(%q) = %s, want %s", s, groupString(got), groupString(want))
			}
			if !n.m.Control(s).Prohibits(s) || !n.m.Drained(s) {
				t.Errorf("Control(%q) = %+v, Drained = %t; want %q prohibited and drained", s, n.m.Control(s), n.m.Drained(s), s)
			}
			if r := n.one(acquire(s, s)); r.Code != Prohibited {
				t.Errorf("acquire(%q, %q) = %v, want %v", s, s, r.Code, Prohibited)
			}
		})
	}
}

func TestKeyControlProhibits(t *testing.T) {
	tests := []struct {
		name   string
		ctl    KeyControl
		holder string
		want   bool
	}{
		{name: "no control", ctl: KeyControl{}, holder: "w1", want: false},
		{name: "disabled only", ctl: KeyControl{Disabled: true}, holder: "w1", want: false},
		{name: "first", ctl: KeyControl{Prohibited: []string{"w1", "w3", "w5"}}, holder: "w1", want: true},
		{name: "middle", ctl: KeyControl{Prohibited: []string{"w1", "w3", "w5"}}, holder: "w3", want: true},
		{name: "last", ctl: KeyControl{Prohibited: []string{"w1", "w3", "w5"}}, holder: "w5", want: true},
		{name: "between", ctl: KeyControl{Prohibited: []string{"w1", "w3", "w5"}}, holder: "w2", want: false},
		{name: "after the last", ctl: KeyControl{Prohibited: []string{"w1", "w3", "w5"}}, holder: "w6", want: false},
		{name: "a prefix of a prohibited holder", ctl: KeyControl{Prohibited: []string{"w10"}}, holder: "w1", want: false},
		{name: "a worker's holder of a prohibited id", ctl: KeyControl{Prohibited: []string{"w3"}}, holder: "w3#1a2b3c4d", want: true},
		{name: "a worker's holder of another id", ctl: KeyControl{Prohibited: []string{"w3"}}, holder: "w30#1a2b3c4d", want: false},
		{name: "a holder prohibited with its suffix", ctl: KeyControl{Prohibited: []string{"w3#1a2b3c4d"}}, holder: "w3#1a2b3c4d", want: true},
		{name: "a suffix alone is not an id", ctl: KeyControl{Prohibited: []string{""}}, holder: "#1a2b3c4d", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.ctl.Prohibits(tt.holder); got != tt.want {
				t.Errorf("%+v.Prohibits(%q) = %t, want %t", tt.ctl, tt.holder, got, tt.want)
			}
		})
	}
}

// GroupMax changes only the maximum: keys and assignment stay, so an
// operator's max change cannot undo a concurrent change of keys.
func TestGroupMaxKeepsKeysAndAssignment(t *testing.T) {
	m := New()
	apply := func(i uint64, c Command) Result {
		return m.Apply(&raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: Encode(c)}).(Result)
	}
	apply(1, GroupPut{Name: "g", Keys: []string{"a", "b"}, MaxPerWorker: 1})
	apply(2, Assign{Group: "g", Assignment: map[string]string{"a": "w1"}})
	apply(3, GroupKeys{Name: "g", Add: []string{"c"}})
	if r := apply(4, GroupMax{Name: "g", MaxPerWorker: 5}); r.Code != Done {
		t.Fatalf("GroupMax: %v", r.Code)
	}
	g := m.Group("g")
	if g.MaxPerWorker != 5 || len(g.Keys) != 3 || g.Assignment["a"] != "w1" || g.ModifyIndex != 4 {
		t.Fatalf("group after GroupMax: %+v, want max 5, keys a b c, a assigned to w1, modified at 4", g)
	}
}
