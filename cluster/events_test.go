package cluster_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// TestOperatorEventsNameTheActor: writes made with cluster.WithActor record
// the actor in their events (operator commands go through fsm.By); a
// holder's own acquire and release do not; every node records the same
// events for the same indexes.
func TestOperatorEventsNameTheActor(t *testing.T) {
	c := inproc.Start(t, 3, inproc.Options{})
	leader := c.Node(c.Leader())
	ctx := cluster.WithActor(harness.Context(t, 10*time.Second), "op-accessor")
	_, from, _ := leader.Events(0, fsm.EventFilter{}, 0)

	lease := acquireOn(t, ctx, leader, "k/a", "h1", time.Minute)
	if _, err := leader.Revoke(ctx, "k/a", false); err != nil {
		t.Fatal(err)
	}
	if _, err := leader.PutGroup(ctx, cluster.GroupSpec{Name: "g", Keys: []string{"k/a"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := leader.SetKeyControl(ctx, "k/b", fsm.KeyControl{Disabled: true}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := leader.DrainWorker(ctx, "w1", true, true); err != nil {
		t.Fatal(err)
	}
	plain := harness.Context(t, 10*time.Second) // no actor: ACLs off
	if _, err := leader.DrainWorker(plain, "w1", false, true); err != nil {
		t.Fatal(err)
	}

	evs, _, err := leader.Events(from, fsm.EventFilter{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Type fsm.EventType
		By   string
	}
	var gotBy []got
	for _, e := range evs {
		gotBy = append(gotBy, got{e.Type, e.By})
	}
	want := []got{
		{fsm.EventAcquired, ""}, {fsm.EventEnding, "op-accessor"}, {fsm.EventGroupChanged, "op-accessor"},
		{fsm.EventControlChanged, "op-accessor"}, {fsm.EventDrained, "op-accessor"}, {fsm.EventDrained, ""},
	}
	if !reflect.DeepEqual(gotBy, want) {
		t.Fatalf("events (type, by) = %v\nwant %v", gotBy, want)
	}
	if evs[0].Holder != "h1" || evs[0].Token != lease.Token || evs[1].Token != lease.Token {
		t.Errorf("acquire and revoke events %+v %+v, want holder h1 token %d", evs[0], evs[1], lease.Token)
	}
	for i := 0; i < c.Len(); i++ {
		n := c.Node(i)
		var theirs []fsm.Event
		harness.WaitUntil(t, 10*time.Second, n.ID()+" to apply everything", func() bool {
			theirs, _, _ = n.Events(from, fsm.EventFilter{}, 0)
			return len(theirs) >= len(evs)
		})
		if !reflect.DeepEqual(theirs, evs) {
			t.Errorf("node %s recorded\n%+v\nthe leader\n%+v", n.ID(), theirs, evs)
		}
	}
}

// TestEventsCompactedOnNode: a node with a tiny history answers an old
// index with ErrCompacted.
func TestEventsCompactedOnNode(t *testing.T) {
	c := inproc.Start(t, 1, inproc.Options{Tweak: func(cfg *cluster.Config) { cfg.EventHistory = 2 }})
	n := c.Node(c.Leader())
	for _, k := range []string{"a", "b", "c", "d"} {
		if _, _, err := n.Acquire(context.Background(), cluster.AcquireRequest{Secret: testSecret, Key: k, Holder: "h", TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := n.Events(1, fsm.EventFilter{}, 0); !errorsIsCompacted(err) {
		t.Fatalf("Events(1) = %v, want ErrCompacted", err)
	}
}

func errorsIsCompacted(err error) bool {
	var ce *fsm.CompactedError
	return errors.Is(err, cluster.ErrCompacted) && errors.As(err, &ce) && ce.Oldest > 1
}

func TestEventHistoryConfig(t *testing.T) {
	for _, n := range []int{0, -1, cluster.MaxEventHistory + 1} {
		cfg := inproc.Config("n1", t.TempDir())
		cfg.InitialCluster = []cluster.Peer{{ID: "n1", RaftAddr: "127.0.0.1:1", HTTPAddr: "127.0.0.1:2"}}
		cfg.EventHistory = n
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "event-history") {
			t.Errorf("EventHistory %d: Validate = %v, want an error naming event-history", n, err)
		}
	}
}

// TestActorOfAuthorizer: the actor recorded for a request is its token's
// accessor id, "anonymous" without a token, nobody with ACLs off.
func TestActorOfAuthorizer(t *testing.T) {
	tok := &fsm.ACLToken{AccessorID: "acc-1", Policies: []string{"p"}}
	if got := cluster.NewAuthorizer(tok, func(string) *fsm.ACLPolicy { return nil }).Actor(); got != "acc-1" {
		t.Errorf("token's actor = %q, want acc-1", got)
	}
	if got := cluster.AllowAll().Actor(); got != "" {
		t.Errorf("actor with ACLs off = %q, want none", got)
	}
	c := inproc.Start(t, 1, inproc.Options{Tweak: func(cfg *cluster.Config) { cfg.ACLEnabled = true }})
	a, err := c.Node(c.Leader()).ResolveToken("")
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Actor(); got != "anonymous" {
		t.Errorf("actor without a token = %q, want anonymous", got)
	}
}
