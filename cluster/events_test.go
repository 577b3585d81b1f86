package cluster_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/cluster/internal/acl"
	"github.com/tenure-io/tenure/cluster/internal/nodeconfig"
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
	for _, n := range []int{0, -1, nodeconfig.MaxEventHistory + 1} {
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
	if got := acl.NewAuthorizer(tok, func(string) *fsm.ACLPolicy { return nil }).Actor(); got != "acc-1" {
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

// nodeLogs keeps each node's JSON log lines apart.
type nodeLogs struct {
	mu   sync.Mutex
	logs map[string]*harness.Buffer
}

// tweak gives each node a JSON logger at level into a buffer of its own.
func (l *nodeLogs) tweak(level hclog.Level) func(*cluster.Config) {
	return func(cfg *cluster.Config) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.logs == nil {
			l.logs = map[string]*harness.Buffer{}
		}
		b := l.logs[cfg.NodeID]
		if b == nil {
			b = &harness.Buffer{}
			l.logs[cfg.NodeID] = b
		}
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: cfg.NodeID, Output: b, Level: level, JSONFormat: true})
	}
}

// lines returns node id's log lines whose message is msg.
func (l *nodeLogs) lines(t *testing.T, id, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	b := l.logs[id]
	l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s: log line %q is not JSON: %v", id, sc.Text(), err)
		}
		if line["@message"] == msg {
			out = append(out, line)
		}
	}
	return out
}

// expiredEvent returns the expired event of key in n's history.
func expiredEvent(t *testing.T, n *cluster.Node, key string) (fsm.Event, bool) {
	t.Helper()
	events, _, err := n.Events(0, fsm.EventFilter{Prefix: key, Types: []fsm.EventType{fsm.EventExpired}}, 0)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	if len(events) == 0 {
		return fsm.Event{}, false
	}
	return events[len(events)-1], true
}

// The leader logs an expiry at INFO as lease_expired with the key, holder,
// token and the term of the entry; the followers, which applied the same
// entry, do not log it at INFO, and nobody logs acquisitions at INFO.
func TestLeaderLogsLeaseEventsWithTerm(t *testing.T) {
	var logs nodeLogs
	c := inproc.Start(t, 3, inproc.Options{Tweak: logs.tweak(hclog.Info)})
	lease := acquire(t, c, "logged/k", "h1", 300*time.Millisecond)
	leader := c.Leader()
	n := c.Node(leader)
	var ev fsm.Event
	harness.WaitUntil(t, 10*time.Second, "the expiry in the leader's history", func() bool {
		var ok bool
		ev, ok = expiredEvent(t, n, "logged/k")
		return ok
	})
	id := n.ID()
	harness.WaitUntil(t, 5*time.Second, "lease_expired in the leader's log", func() bool {
		return len(logs.lines(t, id, "lease_expired")) > 0
	})
	got := logs.lines(t, id, "lease_expired")[0]
	want := map[string]any{"@level": "info", "key": "logged/k", "holder": "h1", "token": float64(lease.Token), "term": float64(ev.Term), "index": float64(ev.Index)}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("lease_expired %s = %v, want %v (line %v)", k, got[k], v, got)
		}
	}
	if ev.Term == 0 {
		t.Errorf("the expired event has term 0")
	}
	for i := 0; i < 3; i++ {
		other := c.Node(i).ID()
		if len(logs.lines(t, other, "lease_acquired")) > 0 {
			t.Errorf("%s logged lease_acquired at INFO; acquisitions are DEBUG", other)
		}
		if i != leader && len(logs.lines(t, other, "lease_expired")) > 0 {
			t.Errorf("follower %s logged lease_expired at INFO; only the leader does", other)
		}
	}
}

// At DEBUG the leader logs acquisitions and releases too, with the term.
func TestLeaderLogsAcquisitionsAtDebug(t *testing.T) {
	var logs nodeLogs
	c := inproc.Start(t, 1, inproc.Options{Tweak: logs.tweak(hclog.Debug)})
	lease := acquire(t, c, "k", "h1", 10*time.Second)
	n := c.Node(c.Leader())
	if _, err := n.Release(harness.Context(t, 5*time.Second), "k", "h1", testSecret, lease.Token); err != nil {
		t.Fatalf("release: %v", err)
	}
	for _, msg := range []string{"lease_acquired", "lease_released"} {
		harness.WaitUntil(t, 5*time.Second, msg+" in the log", func() bool { return len(logs.lines(t, n.ID(), msg)) > 0 })
		got := logs.lines(t, n.ID(), msg)[0]
		if got["@level"] != "debug" || got["key"] != "k" || got["holder"] != "h1" || got["token"] != float64(lease.Token) || got["term"] == nil || got["term"] == float64(0) {
			t.Errorf("%s line = %v, want debug with key k, holder h1, token %d and a term", msg, got, lease.Token)
		}
	}
}
