package fsm

import (
	"fmt"
	"reflect"
	"testing"
)

func TestForget(t *testing.T) {
	tests := []struct {
		name    string
		setup   []Command
		cmd     Forget
		want    Code
		deleted bool
	}{
		{"a free key under its token is deleted", []Command{acquire("a", "w1"), Release{Key: "a", Holder: "w1", Token: 1}},
			Forget{Key: "a", Token: 1}, Freed, true},
		{"a held key stays", []Command{acquire("a", "w1")}, Forget{Key: "a", Token: 1}, NotHeld, false},
		{"a key freed and granted again since stays", []Command{acquire("a", "w1"), Release{Key: "a", Holder: "w1", Token: 1}, acquire("a", "w2"),
			Release{Key: "a", Holder: "w2", Token: 2}}, Forget{Key: "a", Token: 1}, NotHeld, false},
		{"a key of a group stays", []Command{GroupPut{Name: "g", Keys: []string{"a"}}, acquire("a", "w1"), Release{Key: "a", Holder: "w1", Token: 1}},
			Forget{Key: "a", Token: 1}, NotHeld, false},
		{"a key never seen", nil, Forget{Key: "a", Token: 1}, NotFound, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			n.all(tt.setup...)
			before := n.m.Get(tt.cmd.Key)
			tokenBefore := n.m.LastToken()
			got := n.one(tt.cmd)
			if got.Code != tt.want {
				t.Errorf("code = %v, want %v", got.Code, tt.want)
			}
			after := n.m.Get(tt.cmd.Key)
			if tt.deleted && after != nil {
				t.Errorf("record after forget = %s, want none", leaseString(after))
			}
			if !tt.deleted && !reflect.DeepEqual(after, before) {
				t.Errorf("record = %s, want it unchanged: %s", leaseString(after), leaseString(before))
			}
			if n.m.LastToken() != tokenBefore {
				t.Errorf("token counter %d → %d: forget must not touch it", tokenBefore, n.m.LastToken())
			}
		})
	}
}

// A forgotten key granted again gets a token above every earlier one, its
// controls survive, and a list watcher sees the deletion's index.
func TestForgetKeepsTokensGrowingAndControls(t *testing.T) {
	n := newNode(t)
	n.all(acquire("lock", "w1"), acquire("other", "w2"), Release{Key: "lock", Holder: "w1", Token: 1},
		SetKeyControl{Key: "lock", Control: KeyControl{Prohibited: []string{"w9"}}})
	if r := n.one(Forget{Key: "lock", Token: 1}); r.Code != Freed {
		t.Fatalf("forget = %v, want freed", r.Code)
	}
	if _, index := n.m.List(Filter{}); index != n.index {
		t.Errorf("list index = %d, want %d (the forget's)", index, n.index)
	}
	if held, free := n.m.Counts(); held != 1 || free != 0 {
		t.Errorf("counts = %d held %d free, want 1 and 0", held, free)
	}
	if got := n.m.Control("lock").Prohibited; !reflect.DeepEqual(got, []string{"w9"}) {
		t.Errorf("control after forget = %v, want [w9]", got)
	}
	r := n.one(acquire("lock", "w3"))
	if r.Code != Granted || r.Lease.Token != 3 {
		t.Fatalf("grant after forget = %v token %d, want granted token 3", r.Code, tokenOf(r.Lease))
	}
}

func tokenOf(l *Lease) uint64 {
	if l == nil {
		return 0
	}
	return l.Token
}

func TestGroupPutCAS(t *testing.T) {
	put := GroupDefine{Name: "g", Keys: []string{"b", "a"}, MaxPerWorker: 2, MinWorkers: 1}
	tests := []struct {
		name  string
		setup []Command
		index func(n *node) uint64
		want  Code
	}{
		{"index 0 creates a missing group", nil, func(*node) uint64 { return 0 }, Done},
		{"index 0 refuses to replace a group", []Command{GroupPut{Name: "g"}}, func(*node) uint64 { return 0 }, CASFailed},
		{"the group's modify index replaces it", []Command{GroupPut{Name: "g"}, GroupMax{Name: "g", MaxPerWorker: 5}},
			func(n *node) uint64 { return n.m.Group("g").ModifyIndex }, Done},
		{"an older index is refused", []Command{GroupPut{Name: "g"}, GroupMax{Name: "g", MaxPerWorker: 5}},
			func(n *node) uint64 { return n.m.Group("g").ModifyIndex - 1 }, CASFailed},
		{"an index for a group that does not exist is refused", nil, func(*node) uint64 { return 3 }, CASFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			n.all(tt.setup...)
			before := n.m.Group("g")
			got := n.one(GroupPutCAS{Define: put, Index: tt.index(n)})
			if got.Code != tt.want {
				t.Fatalf("code = %v, want %v", got.Code, tt.want)
			}
			g := n.m.Group("g")
			if tt.want == CASFailed {
				if g != before {
					t.Errorf("group = %s, want it unchanged: %s", groupString(g), groupString(before))
				}
				return
			}
			if !reflect.DeepEqual(g.Keys, []string{"a", "b"}) || g.MaxPerWorker != 2 || g.ModifyIndex != n.index {
				t.Errorf("group = %s, want keys [a b], max 2, modify index %d", groupString(g), n.index)
			}
		})
	}
}

func TestEditKeyControl(t *testing.T) {
	tests := []struct {
		name  string
		setup []Command
		edit  EditKeyControl
		want  KeyControl
	}{
		{"prohibit adds to the current holders", []Command{SetKeyControl{Key: "k", Control: KeyControl{Disabled: true, Prohibited: []string{"w1"}}}},
			EditKeyControl{Key: "k", Prohibit: []string{"w3", "w2", "w3"}}, KeyControl{Disabled: true, Prohibited: []string{"w1", "w2", "w3"}}},
		{"allow removes one holder and keeps the rest", []Command{SetKeyControl{Key: "k", Control: KeyControl{Prohibited: []string{"w1", "w2"}}}},
			EditKeyControl{Key: "k", Allow: []string{"w1", "w9"}}, KeyControl{Prohibited: []string{"w2"}}},
		{"disable keeps the prohibited holders", []Command{SetKeyControl{Key: "k", Control: KeyControl{Prohibited: []string{"w1"}}}},
			EditKeyControl{Key: "k", SetDisabled: true, Disabled: true}, KeyControl{Disabled: true, Prohibited: []string{"w1"}}},
		{"enable keeps the prohibited holders", []Command{SetKeyControl{Key: "k", Control: KeyControl{Disabled: true, Prohibited: []string{"w1"}}}},
			EditKeyControl{Key: "k", SetDisabled: true}, KeyControl{Prohibited: []string{"w1"}}},
		{"allowing the last holder clears the control", []Command{SetKeyControl{Key: "k", Control: KeyControl{Prohibited: []string{"w1"}}}},
			EditKeyControl{Key: "k", Allow: []string{"w1"}}, KeyControl{}},
		{"an edit of a key without controls", nil, EditKeyControl{Key: "k", Prohibit: []string{"w1"}}, KeyControl{Prohibited: []string{"w1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			n.all(tt.setup...)
			if r := n.one(tt.edit); r.Code != Done {
				t.Fatalf("code = %v, want done", r.Code)
			}
			if got := n.m.Control("k"); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("control = %s, want %s", controlString(got), controlString(tt.want))
			}
			if n.m.GroupIndex() != n.index {
				t.Errorf("group index = %d, want %d", n.m.GroupIndex(), n.index)
			}
		})
	}
}

// Two operators who each prohibit a holder at the same time both get
// theirs: the edits apply one on top of the other.
func TestEditKeyControlConcurrentEditsBothApply(t *testing.T) {
	n := newNode(t)
	n.batch(EditKeyControl{Key: "k", Prohibit: []string{"a"}}, EditKeyControl{Key: "k", Prohibit: []string{"b"}})
	if got := n.m.Control("k").Prohibited; !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("prohibited = %v, want [a b]", got)
	}
}

func TestEditKeyControlBound(t *testing.T) {
	n := newNode(t)
	many := make([]string, MaxProhibited)
	for i := range many {
		many[i] = fmt.Sprintf("w%04d", i)
	}
	if r := n.one(EditKeyControl{Key: "k", Prohibit: many}); r.Code != Done {
		t.Fatalf("prohibiting %d holders = %v, want done", MaxProhibited, r.Code)
	}
	index := n.m.GroupIndex()
	if r := n.one(EditKeyControl{Key: "k", Prohibit: []string{"one-more"}}); r.Code != Refused {
		t.Fatalf("prohibiting one more = %v, want refused", r.Code)
	}
	if got := len(n.m.Control("k").Prohibited); got != MaxProhibited || n.m.GroupIndex() != index {
		t.Errorf("after a refused edit: %d prohibited, group index %d → %d; want it unchanged", got, index, n.m.GroupIndex())
	}
}

func TestListNeverAcquiredGroupKeys(t *testing.T) {
	n := newNode(t)
	n.all(
		GroupPut{Name: "scenes", Keys: []string{"scene-1", "scene-2", "scene-3"}},
		GroupPut{Name: "more", Keys: []string{"scene-3", "x-1"}},
		acquire("scene-1", "w1"),
		acquire("scene-2", "w2"), Release{Key: "scene-2", Holder: "w2", Token: 2},
		acquire("lock", "w3"), Release{Key: "lock", Holder: "w3", Token: 3},
	)
	keysOf := func(ls []*Lease) []string {
		var out []string
		for _, l := range ls {
			out = append(out, fmt.Sprintf("%s/%d/%s", l.Key, l.Token, l.Reason))
		}
		return out
	}
	tests := []struct {
		name string
		f    Filter
		want []string
	}{
		{"free lists never-acquired group keys once, in key order", Filter{State: "free", NeverAcquired: true},
			[]string{"lock/3/released", "scene-2/2/released", "scene-3/0/never_acquired", "x-1/0/never_acquired"}},
		{"a prefix applies to them", Filter{State: "free", Prefix: "scene-", NeverAcquired: true},
			[]string{"scene-2/2/released", "scene-3/0/never_acquired"}},
		{"a holder filter excludes them", Filter{State: "free", Holder: "w2", NeverAcquired: true},
			[]string{"scene-2/2/released"}},
		{"without the option only records", Filter{State: "free"}, []string{"lock/3/released", "scene-2/2/released"}},
		{"held lists no never-acquired key", Filter{State: "held", NeverAcquired: true}, []string{"scene-1/1/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := n.m.List(tt.f)
			if !reflect.DeepEqual(keysOf(got), tt.want) {
				t.Errorf("List = %v, want %v", keysOf(got), tt.want)
			}
		})
	}
	// A group change changes the free answer, so its index counts.
	n.all(GroupKeys{Name: "more", Add: []string{"x-2"}})
	if _, index := n.m.List(Filter{State: "free", NeverAcquired: true}); index != n.index {
		t.Errorf("free list index = %d, want %d (the group change's)", index, n.index)
	}
}
