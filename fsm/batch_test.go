package fsm

import (
	"reflect"
	"testing"
)

// TestApplyBatch checks that a Batch applies its commands in order, in one
// entry, each with its own result.
func TestApplyBatch(t *testing.T) {
	type outcome struct {
		code   Code
		holder string
		token  uint64
	}
	tests := []struct {
		name  string
		setup []Command
		batch []Command
		want  []outcome
		// key and its holder and token after the batch.
		key    string
		holder string
		token  uint64
		held   bool
	}{
		{
			name:  "release then acquire by a waiter hands the key over in one entry",
			setup: []Command{acquire("k", "owner")},
			batch: []Command{Release{Key: "k", Holder: "owner", Token: 1}, acquire("k", "waiter")},
			want:  []outcome{{Freed, "owner", 1}, {Granted, "waiter", 2}},
			key:   "k", holder: "waiter", token: 2, held: true,
		},
		{
			name:  "acquire before the release in the same entry is refused",
			setup: []Command{acquire("k", "owner")},
			batch: []Command{acquire("k", "waiter"), Release{Key: "k", Holder: "owner", Token: 1}},
			want:  []outcome{{Held, "owner", 1}, {Freed, "owner", 1}},
			key:   "k", holder: "owner", token: 1, held: false,
		},
		{
			name: "results follow command order across keys",
			batch: []Command{
				acquire("a", "w1"),
				acquire("a", "w2"),
				acquire("b", "w2"),
				Revoke{Key: "a"},
				acquire("a", "w2"),
				Release{Key: "b", Holder: "w2", Token: 2},
				Revoke{Key: "c"},
				LeaderEstablished{Term: 9},
				Expire{Key: "a", Token: 3, Term: 8},
			},
			want: []outcome{
				{Granted, "w1", 1},
				{Held, "w1", 1},
				{Granted, "w2", 2},
				{Freed, "w1", 1},
				{Granted, "w2", 3},
				{Freed, "w2", 2},
				{NotFound, "", 0},
				{Done, "", 0},
				{NotHeld, "w2", 3},
			},
			key: "a", holder: "w2", token: 3, held: true,
		},
		{
			name:  "an empty batch changes nothing",
			setup: []Command{acquire("k", "owner")},
			batch: nil,
			want:  []outcome{},
			key:   "k", holder: "owner", token: 1, held: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			n.all(tt.setup...)

			results := n.batch(tt.batch...)

			got := make([]outcome, len(results))
			for i, r := range results {
				got[i] = outcome{code: r.Code}
				if r.Lease != nil {
					got[i].holder, got[i].token = r.Lease.Holder, r.Lease.Token
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("results = %+v\nwant      %+v", got, tt.want)
			}
			l := n.m.Get(tt.key)
			if l == nil {
				t.Fatalf("Get(%q) = nil after the batch", tt.key)
			}
			if l.Holder != tt.holder || l.Token != tt.token || l.Held != tt.held {
				t.Errorf("Get(%q) = holder %q token %d held %t, want holder %q token %d held %t",
					tt.key, l.Holder, l.Token, l.Held, tt.holder, tt.token, tt.held)
			}
		})
	}
}

// TestApplyBatchSharesOneIndex checks that every lease a batch changes
// carries the batch entry's index, as one Raft entry.
func TestApplyBatchSharesOneIndex(t *testing.T) {
	n := newNode(t)
	n.all(acquire("a", "w1"), acquire("b", "w1"))
	n.batch(Release{Key: "a", Holder: "w1", Token: 1}, acquire("a", "w2"), Revoke{Key: "b"}, acquire("c", "w3"))

	for _, key := range []string{"a", "b", "c"} {
		if got := n.m.Get(key).ModifyIndex; got != 3 {
			t.Errorf("Get(%q).ModifyIndex = %d, want 3 (the batch's index)", key, got)
		}
	}
	if _, _, lease := n.m.Indexes(); lease != 3 {
		t.Errorf("lease index = %d, want 3", lease)
	}
}
