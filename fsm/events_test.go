package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// ev is the part of an event that the tests compare.
type ev struct {
	Type                       EventType
	Key, Holder, Group, Worker string
	Token                      uint64
	By, Reason                 string
}

func evs(events []Event) []ev {
	out := make([]ev, len(events))
	for i, e := range events {
		out[i] = ev{e.Type, e.Key, e.Holder, e.Group, e.Worker, e.Token, e.By, e.Reason}
	}
	return out
}

// allEvents returns every event in the history.
func allEvents(t *testing.T, m *Machine) []Event {
	t.Helper()
	out, _, err := m.Events(m.EventBase(), EventFilter{}, 0)
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	return out
}

// TestEventsOfEveryChange: each kind of applied change yields its event,
// with the key, holder, token and the operator who did it; what changes
// nothing visible (a kept lease, a refused acquire, LeaderEstablished, ACL
// commands) yields none.
func TestEventsOfEveryChange(t *testing.T) {
	tests := []struct {
		name  string
		setup []Command
		cmd   Command
		want  []ev
	}{
		{name: "acquire", cmd: acquire("a", "h1"),
			want: []ev{{Type: EventAcquired, Key: "a", Holder: "h1", Token: 1}}},
		{name: "kept", setup: []Command{acquire("a", "h1")}, cmd: acquire("a", "h1")},
		{name: "held by another", setup: []Command{acquire("a", "h1")}, cmd: acquire("a", "h2")},
		{name: "release", setup: []Command{acquire("a", "h1")}, cmd: Release{Key: "a", Holder: "h1", Token: 1},
			want: []ev{{Type: EventReleased, Key: "a", Holder: "h1", Token: 1}}},
		{name: "release of another token", setup: []Command{acquire("a", "h1")}, cmd: Release{Key: "a", Holder: "h1", Token: 7}},
		{name: "expire", setup: []Command{acquire("a", "h1")}, cmd: Expire{Key: "a", Token: 1, Term: 1},
			want: []ev{{Type: EventExpired, Key: "a", Holder: "h1", Token: 1}}},
		{name: "revoke by an operator", setup: []Command{acquire("a", "h1")}, cmd: By{Accessor: "op-1", Cmd: Revoke{Key: "a"}},
			want: []ev{{Type: EventRevoked, Key: "a", Holder: "h1", Token: 1, By: "op-1", Reason: "revoked"}}},
		{name: "revoke without ACLs", setup: []Command{acquire("a", "h1")}, cmd: Revoke{Key: "a"},
			want: []ev{{Type: EventRevoked, Key: "a", Holder: "h1", Token: 1, Reason: "revoked"}}},
		{name: "revoke ends safely", setup: []Command{acquire("a", "h1")}, cmd: By{Accessor: "op-5", Cmd: End{Key: "a"}},
			want: []ev{{Type: EventEnding, Key: "a", Holder: "h1", Token: 1, By: "op-5", Reason: "revoked"}}},
		{name: "an ending lease expires as revoked", setup: []Command{acquire("a", "h1"), End{Key: "a"}}, cmd: Expire{Key: "a", Token: 1, Term: 1},
			want: []ev{{Type: EventRevoked, Key: "a", Holder: "h1", Token: 1, Reason: "revoked"}}},
		{name: "forced revoke of a holder", setup: []Command{acquire("a", "h1"), acquire("b", "h1")}, cmd: End{Holder: "h1", Force: true},
			want: []ev{
				{Type: EventRevoked, Key: "a", Holder: "h1", Token: 1, Reason: "revoked"},
				{Type: EventRevoked, Key: "b", Holder: "h1", Token: 2, Reason: "revoked"},
			}},
		{name: "disable ends the lease", setup: []Command{acquire("a", "h1")}, cmd: SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}},
			want: []ev{
				{Type: EventControlChanged, Key: "a"},
				{Type: EventEnding, Key: "a", Holder: "h1", Token: 1, Reason: "disabled"},
			}},
		{name: "a prohibiting edit ends the lease", setup: []Command{acquire("a", "h1")}, cmd: EditKeyControl{Key: "a", Prohibit: []string{"h1"}, Force: true},
			want: []ev{
				{Type: EventControlChanged, Key: "a"},
				{Type: EventRevoked, Key: "a", Holder: "h1", Token: 1, Reason: "prohibited"},
			}},
		{name: "group created", cmd: By{Accessor: "anonymous", Cmd: GroupPut{Name: "g", Keys: []string{"g/1"}}},
			want: []ev{{Type: EventGroupChanged, Group: "g", By: "anonymous", Reason: GroupCreated}}},
		{name: "group updated", setup: []Command{GroupPut{Name: "g"}}, cmd: GroupPut{Name: "g", Keys: []string{"g/1"}},
			want: []ev{{Type: EventGroupChanged, Group: "g", Reason: GroupUpdated}}},
		{name: "group keys", setup: []Command{GroupPut{Name: "g"}}, cmd: GroupKeys{Name: "g", Add: []string{"g/2"}},
			want: []ev{{Type: EventGroupChanged, Group: "g", Reason: GroupKeysSet}}},
		{name: "group max", setup: []Command{GroupPut{Name: "g"}}, cmd: GroupMax{Name: "g", MaxPerWorker: 3},
			want: []ev{{Type: EventGroupChanged, Group: "g", Reason: GroupMaxSet}}},
		{name: "group deleted", setup: []Command{GroupPut{Name: "g"}}, cmd: GroupDelete{Name: "g"},
			want: []ev{{Type: EventGroupChanged, Group: "g", Reason: GroupDeleted}}},
		{name: "group key set", setup: []Command{GroupPut{Name: "g", Keys: []string{"g/1"}}}, cmd: GroupSetKeys{Name: "g", Keys: []string{"g/2"}},
			want: []ev{{Type: EventGroupChanged, Group: "g", Reason: GroupKeysSet}}},
		{name: "group key set that is the group's already", setup: []Command{GroupPut{Name: "g", Keys: []string{"g/1", "g/2"}}},
			cmd: GroupSetKeys{Name: "g", Keys: []string{"g/2", "g/1", "g/2"}}},
		{name: "group command on a missing group", cmd: GroupKeys{Name: "nope", Add: []string{"x"}}},
		{name: "assign: one event per changed key, in key order",
			setup: []Command{GroupPut{Name: "g", Keys: []string{"g/1", "g/2", "g/3", "g/4"}},
				Assign{Group: "g", Assignment: map[string]string{"g/1": "w1", "g/2": "w1", "g/3": "w2"}}},
			cmd: Assign{Group: "g", Assignment: map[string]string{"g/1": "w1", "g/2": "w2", "g/4": "w3"}},
			want: []ev{
				{Type: EventAssigned, Group: "g", Key: "g/2", Worker: "w2"},
				{Type: EventAssigned, Group: "g", Key: "g/3"},
				{Type: EventAssigned, Group: "g", Key: "g/4", Worker: "w3"},
			}},
		{name: "control", cmd: By{Accessor: "op-2", Cmd: SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}}},
			want: []ev{{Type: EventControlChanged, Key: "a", By: "op-2"}}},
		{name: "drain", cmd: By{Accessor: "op-3", Cmd: WorkerDrain{Worker: "w1", Draining: true}},
			want: []ev{{Type: EventDrained, Worker: "w1", By: "op-3", Reason: WorkerDrained}}},
		{name: "undrain", setup: []Command{WorkerDrain{Worker: "w1", Draining: true}}, cmd: WorkerDrain{Worker: "w1"},
			want: []ev{{Type: EventDrained, Worker: "w1", Reason: WorkerResumed}}},
		{name: "metadata changed", setup: []Command{acquire("a", "h1")},
			cmd:  Acquire{Key: "a", Holder: "h1", TTL: 10 * time.Second, Metadata: map[string]string{"v": "2"}},
			want: []ev{{Type: EventMetadataChanged, Key: "a", Holder: "h1", Token: 1}}},
		{name: "forgotten", setup: []Command{acquire("a", "h1"), Release{Key: "a", Holder: "h1", Token: 1}}, cmd: Forget{Key: "a", Token: 1},
			want: []ev{{Type: EventForgotten, Key: "a", Holder: "h1", Token: 1}}},
		{name: "forget of a held key", setup: []Command{acquire("a", "h1")}, cmd: Forget{Key: "a", Token: 1}},
		{name: "group defined with cas", cmd: By{Accessor: "op-4", Cmd: GroupPutCAS{Define: GroupDefine{Name: "g"}}},
			want: []ev{{Type: EventGroupChanged, Group: "g", By: "op-4", Reason: GroupCreated}}},
		{name: "group cas failed", setup: []Command{GroupPut{Name: "g"}}, cmd: GroupPutCAS{Define: GroupDefine{Name: "g"}}},
		{name: "control edit", cmd: EditKeyControl{Key: "a", Prohibit: []string{"w1"}},
			want: []ev{{Type: EventControlChanged, Key: "a"}}},
		{name: "stuck and unstuck", setup: []Command{GroupPut{Name: "g"}, MarkStuck{Group: "g", Workers: []string{"w1", "w2"}}},
			cmd: MarkStuck{Group: "g", Workers: []string{"w2", "w3"}},
			want: []ev{
				{Type: EventStuck, Group: "g", Worker: "w3", Reason: WorkerStuck},
				{Type: EventStuck, Group: "g", Worker: "w1", Reason: WorkerUnstuck},
			}},
		{name: "leader established", cmd: LeaderEstablished{Term: 3}},
		{name: "acl bootstrap", cmd: ACLBootstrap{Token: ACLToken{AccessorID: "a", SecretHash: "h", Management: true}}},
		{name: "disabled key", setup: []Command{SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}}}, cmd: acquire("a", "h1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			n.all(tt.setup...)
			n.all(tt.cmd)
			got, next, err := n.m.Events(n.index-1, EventFilter{}, 0)
			if err != nil {
				t.Fatalf("Events: %v", err)
			}
			if next != n.index {
				t.Errorf("next = %d, want the applied index %d", next, n.index)
			}
			for _, e := range got {
				if e.Index != n.index || e.Term != n.term {
					t.Errorf("event %v at index %d term %d, want %d %d", e.Type, e.Index, e.Term, n.index, n.term)
				}
			}
			if g := evs(got); !reflect.DeepEqual(g, tt.want) && !(len(g) == 0 && len(tt.want) == 0) {
				t.Errorf("events = %+v\nwant     %+v", g, tt.want)
			}
		})
	}
}

// TestControlEventCarriesControls: a control_changed event says what the
// key's controls became.
func TestControlEventCarriesControls(t *testing.T) {
	n := newNode(t)
	n.one(SetKeyControl{Key: "a", Control: KeyControl{Disabled: true, Prohibited: []string{"w2", "w1", "w2"}}})
	got := allEvents(t, n.m)
	if len(got) != 1 || !got[0].Disabled || !reflect.DeepEqual(got[0].Prohibited, []string{"w1", "w2"}) {
		t.Fatalf("events = %+v, want one control_changed, disabled, prohibited [w1 w2]", got)
	}
}

// TestHandedOffInOneEntry: a grant of a key that the same entry freed is
// handed_off, after the event that freed it; in a later entry it is a
// plain acquired.
func TestHandedOffInOneEntry(t *testing.T) {
	for _, free := range []struct {
		cmd  Command
		want EventType
	}{
		{Release{Key: "a", Holder: "h1", Token: 1}, EventReleased},
		{Expire{Key: "a", Token: 1, Term: 1}, EventExpired},
		{By{Accessor: "op", Cmd: Revoke{Key: "a"}}, EventRevoked},
	} {
		t.Run(free.want.String(), func(t *testing.T) {
			n := newNode(t)
			n.one(acquire("a", "h1"))
			n.batch(free.cmd, acquire("b", "h3"), acquire("a", "h2"))
			got, _, _ := n.m.Events(1, EventFilter{}, 0)
			byOp, reason := "", ""
			if free.want == EventRevoked {
				byOp, reason = "op", "revoked"
			}
			want := []ev{
				{Type: free.want, Key: "a", Holder: "h1", Token: 1, By: byOp, Reason: reason},
				{Type: EventAcquired, Key: "b", Holder: "h3", Token: 2},
				{Type: EventHandedOff, Key: "a", Holder: "h2", Token: 3},
			}
			if !reflect.DeepEqual(evs(got), want) {
				t.Fatalf("events = %+v\nwant     %+v", evs(got), want)
			}
			n.one(Release{Key: "a", Holder: "h2", Token: 3})
			n.one(acquire("a", "h1"))
			got, _, _ = n.m.Events(n.index-1, EventFilter{}, 0)
			if len(got) != 1 || got[0].Type != EventAcquired {
				t.Fatalf("grant in a later entry: events = %+v, want one acquired", evs(got))
			}
		})
	}
}

// TestEventHistoryBound: the history keeps at most its capacity of events,
// drops whole entries, and answers a reader that asks for dropped events
// with ErrCompacted and the oldest index it may ask for.
func TestEventHistoryBound(t *testing.T) {
	n := &node{t: t, m: New(WithEventHistory(5)), term: 1}
	for i := 0; i < 4; i++ { // indexes 1 to 4: one event each
		n.one(acquire(fmt.Sprintf("k%d", i), "h"))
	}
	// Index 5: three events; two old entries must go.
	n.batch(acquire("x", "h"), acquire("y", "h"), acquire("z", "h"))
	if base := n.m.EventBase(); base != 2 {
		t.Fatalf("EventBase = %d, want 2 (indexes 1 and 2 dropped)", base)
	}
	got := allEvents(t, n.m)
	if len(got) != 5 || got[0].Index != 3 || got[4].Index != 5 {
		t.Fatalf("history = %+v, want the 5 events of indexes 3 to 5", got)
	}
	_, _, err := n.m.Events(1, EventFilter{}, 0)
	var ce *CompactedError
	if !errors.Is(err, ErrCompacted) || !errors.As(err, &ce) || ce.Oldest != 2 {
		t.Fatalf("Events(1) error = %v, want ErrCompacted with oldest 2", err)
	}
	if _, _, err := n.m.Events(2, EventFilter{}, 0); err != nil {
		t.Fatalf("Events(2): %v", err)
	}
	// An entry that drops part of an older entry drops all of it: index 5
	// held three events; adding three at index 6 leaves only index 6.
	n.batch(acquire("p", "h"), acquire("q", "h"), acquire("r", "h"))
	got = allEvents(t, n.m)
	if base := n.m.EventBase(); base != 5 || len(got) != 3 || got[0].Index != 6 {
		t.Fatalf("EventBase %d, history %+v; want base 5 and the 3 events of index 6", base, evs(got))
	}
	// An entry larger than the whole history leaves nothing but says so.
	cmds := make([]Command, 7)
	for i := range cmds {
		cmds[i] = acquire(fmt.Sprintf("big%d", i), "h")
	}
	n.batch(cmds...)
	if base := n.m.EventBase(); base != n.index || len(allEvents(t, n.m)) != 0 {
		t.Fatalf("after an entry of 7 events into a history of 5: base %d, want %d and no events", n.m.EventBase(), n.index)
	}
	// Entries without events leave the history as it is.
	n.one(LeaderEstablished{Term: 1})
	if _, next, err := n.m.Events(n.index-1, EventFilter{}, 0); err != nil || next != n.index {
		t.Fatalf("Events after an entry without events: next %d, err %v; want %d, nil", next, err, n.index)
	}
}

// TestEventHistoryWraps: a history that has wrapped around many times
// still answers every reader in index order with no gaps.
func TestEventHistoryWraps(t *testing.T) {
	n := &node{t: t, m: New(WithEventHistory(100)), term: 1}
	for i := 0; i < 1000; i++ {
		if i%3 == 0 {
			n.batch(acquire(fmt.Sprintf("a%d", i), "h"), acquire(fmt.Sprintf("b%d", i), "h"))
		} else {
			n.one(acquire(fmt.Sprintf("k%d", i), "h"))
		}
		got := allEvents(t, n.m)
		if len(got) > 100 {
			t.Fatalf("history of %d events, capacity 100", len(got))
		}
		for j := 1; j < len(got); j++ {
			if got[j].Token != got[j-1].Token+1 {
				t.Fatalf("after entry %d: gap between tokens %d and %d", n.index, got[j-1].Token, got[j].Token)
			}
		}
		if len(got) > 0 && got[0].Index != n.m.EventBase()+1 {
			t.Fatalf("after entry %d: first event at %d, base %d", n.index, got[0].Index, n.m.EventBase())
		}
	}
}

// TestEventsFilterAndLimit: the prefix matches keys, groups and workers;
// types select; a limit never splits an entry and next resumes after it.
func TestEventsFilterAndLimit(t *testing.T) {
	n := newNode(t)
	n.one(acquire("jobs/1", "h"))                                                   // 1
	n.one(acquire("other", "h"))                                                    // 2
	n.one(GroupPut{Name: "jobs-group", Keys: []string{"jobs/1"}})                   // 3
	n.one(WorkerDrain{Worker: "jobs-worker", Draining: true})                       // 4
	n.batch(acquire("jobs/2", "h"), acquire("jobs/3", "h"), acquire("jobs/4", "h")) // 5
	n.one(Release{Key: "jobs/1", Holder: "h", Token: 1})                            // 6

	got, next, _ := n.m.Events(0, EventFilter{Prefix: "jobs"}, 0)
	if len(got) != 7 || next != 6 {
		t.Fatalf("prefix jobs: %d events, next %d; want 7, 6: %+v", len(got), next, evs(got))
	}
	got, _, _ = n.m.Events(0, EventFilter{Types: []EventType{EventReleased, EventDrained}}, 0)
	if len(got) != 2 || got[0].Type != EventDrained || got[1].Type != EventReleased {
		t.Fatalf("types released,drained: %+v", evs(got))
	}
	// Limit 5 reaches into index 5: the whole of index 5 comes along.
	got, next, _ = n.m.Events(0, EventFilter{}, 5)
	if len(got) != 7 || next != 5 {
		t.Fatalf("limit 5: %d events, next %d; want 7 (index 5 whole), 5", len(got), next)
	}
	got, next, _ = n.m.Events(next, EventFilter{}, 5)
	if len(got) != 1 || got[0].Index != 6 || next != 6 {
		t.Fatalf("after 5: %+v next %d, want the release at 6, next 6", evs(got), next)
	}
	// A reader ahead of this node does not go back.
	if _, next, _ := n.m.Events(50, EventFilter{}, 0); next != 50 {
		t.Fatalf("Events(50) next = %d, want 50", next)
	}
}

// TestRestoreResetsEvents: after a restore the history holds what comes
// after the snapshot only: what came before is no longer in the log.
func TestRestoreResetsEvents(t *testing.T) {
	a := newNode(t)
	a.all(acquire("a", "h"), acquire("b", "h"))
	data := persist(t, a.m)
	b := newNode(t)
	b.all(acquire("x", "h"))
	if err := b.m.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if base := b.m.EventBase(); base != 2 {
		t.Fatalf("EventBase after restore = %d, want the snapshot's index 2", base)
	}
	if _, _, err := b.m.Events(0, EventFilter{}, 0); !errors.Is(err, ErrCompacted) {
		t.Fatalf("Events(0) after restore: %v, want ErrCompacted", err)
	}
	b.index = 2
	b.one(Release{Key: "a", Holder: "h", Token: 1})
	got, _, err := b.m.Events(2, EventFilter{}, 0)
	if err != nil || len(got) != 1 || got[0].Type != EventReleased || got[0].Index != 3 {
		t.Fatalf("events after restore = %+v, %v; want the release at 3", got, err)
	}
}

// TestSameLogSameEvents: replicas that apply the same log record the same
// events, and a replica with a smaller history holds a suffix of them.
func TestSameLogSameEvents(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		for _, log := range [][]entry{randomLog(seed, 2000), randomPlacementLog(seed, 2000)} {
			a, b := replay(t, log), replay(t, log)
			small := New(WithEventHistory(50))
			for i, e := range log {
				small.Apply(&raft.Log{Index: uint64(i + 1), Term: e.term, Type: raft.LogCommand, Data: e.data})
			}
			ea, eb := allEvents(t, a), allEvents(t, b)
			if len(ea) < 100 {
				t.Fatalf("seed %d: only %d events", seed, len(ea))
			}
			if !reflect.DeepEqual(ea, eb) {
				t.Fatalf("seed %d: replicas recorded different events", seed)
			}
			es := allEvents(t, small)
			if len(es) == 0 || len(es) > 50 || !reflect.DeepEqual(es, ea[len(ea)-len(es):]) {
				t.Fatalf("seed %d: the small history (%d events) is not a suffix of the full one", seed, len(es))
			}
		}
	}
}

// TestEventsWakeChanged: every entry that records an event closes Changed.
func TestEventsWakeChanged(t *testing.T) {
	n := newNode(t)
	for _, c := range []Command{acquire("a", "h"), GroupPut{Name: "g"}, WorkerDrain{Worker: "w", Draining: true},
		SetKeyControl{Key: "a"}, Release{Key: "a", Holder: "h", Token: 1}} {
		ch := n.m.Changed()
		n.one(c)
		select {
		case <-ch:
		default:
			t.Fatalf("%T recorded an event but did not close Changed", c)
		}
	}
}

// TestEventsCarryTheLeadersTime: every event of an entry carries the time
// the leader appended it (raft.Log.AppendedAt, stored in the entry), so
// every server reports the same; an entry without one gives none.
func TestEventsCarryTheLeadersTime(t *testing.T) {
	m := New()
	at := time.Date(2026, 11, 28, 23, 59, 10, 932052618, time.UTC)
	m.Apply(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, AppendedAt: at, Data: Encode(acquire("a", "h1"))})
	m.Apply(&raft.Log{Index: 2, Term: 1, Type: raft.LogCommand, Data: Encode(acquire("b", "h1"))})
	got := allEvents(t, m)
	if len(got) != 2 {
		t.Fatalf("events %+v, want two acquires", got)
	}
	if got[0].At != at.UnixNano() {
		t.Errorf("event of an entry appended at %v carries %d, want %d", at, got[0].At, at.UnixNano())
	}
	if got[1].At != 0 {
		t.Errorf("event of an entry without a time carries %d, want 0", got[1].At)
	}
}
