package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/tenure-io/tenure/fsm"
)

// durCmd is a command entry at index in term 1.
func durCmd(index uint64, c fsm.Command) *raft.Log {
	return &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: fsm.Encode(c)}
}

// durLog is a short history: tokens 1 (a/w1), 2 (b/w2, in a batch that
// also releases a) and 3 (a/w3, then kept by a retry), among entries that
// carry no command.
func durLog() []*raft.Log {
	conf := raft.EncodeConfiguration(raft.Configuration{Servers: []raft.Server{{ID: "n1", Address: "n1"}}})
	return []*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: conf},
		durCmd(2, fsm.LeaderEstablished{Term: 1}),
		durCmd(3, fsm.Acquire{Key: "a", Holder: "w1", TTL: time.Second}),
		durCmd(4, fsm.Batch{Commands: []fsm.Command{
			fsm.Acquire{Key: "b", Holder: "w2", TTL: time.Second},
			fsm.Release{Key: "a", Holder: "w1", Token: 1},
		}}),
		{Index: 5, Term: 1, Type: raft.LogNoop},
		durCmd(6, fsm.Acquire{Key: "a", Holder: "w3", TTL: time.Second}),
		durCmd(7, fsm.Acquire{Key: "a", Holder: "w3", TTL: time.Second}),
	}
}

// durAcks are the acquisitions durLog grants.
var durAcks = []Ack{{"a", "w1", 1, 10}, {"b", "w2", 2, 20}, {"a", "w3", 3, 30}, {"a", "w3", 3, 40}}

// writeDurLog stores logs in a new data dir the way package cluster lays it
// out, and returns the dir.
func writeDurLog(t *testing.T, logs []*raft.Log) string {
	t.Helper()
	dir := t.TempDir()
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, raftDBFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if len(logs) > 0 {
		if err := store.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// writeDurSnapshot persists into dir the snapshot of a machine that applied
// logs.
func writeDurSnapshot(t *testing.T, dir string, logs []*raft.Log) {
	t.Helper()
	m := fsm.New()
	for _, l := range logs {
		if l.Type == raft.LogCommand {
			m.Apply(l)
		}
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 3, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	last := logs[len(logs)-1]
	sink, err := snaps.Create(raft.SnapshotVersionMax, last.Index, last.Term, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Persist(sink); err != nil {
		t.Fatal(err)
	}
}

// wantDurViolations fails unless r is invalid with one violation containing
// each of want, or valid when want is empty.
func wantDurViolations(t *testing.T, r Result, want ...string) {
	t.Helper()
	if len(want) == 0 && !r.Valid {
		t.Fatalf("want valid, got:\n%s", r)
	}
	for _, w := range want {
		found := false
		for _, v := range r.Violations {
			found = found || strings.Contains(v, w)
		}
		if r.Valid || !found {
			t.Fatalf("want a violation containing %q, got:\n%s", w, r)
		}
	}
}

func TestDurabilityAllPresent(t *testing.T) {
	nodes := map[string]string{"n1": writeDurLog(t, durLog()), "n2": writeDurLog(t, durLog()), "n3": writeDurLog(t, durLog())}
	r := Durability(nodes, durAcks)
	wantDurViolations(t, r)
	if !strings.Contains(r.String(), "node n2: snapshot index 0, log 1..7, 3 grants replayed, final token 3") {
		t.Fatalf("missing per-node note:\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(nodes["n1"], snapshotsDir)); !os.IsNotExist(err) {
		t.Fatalf("the check created the snapshot dir: %v", err)
	}
}

func TestDurabilityLostAck(t *testing.T) {
	nodes := map[string]string{"n1": writeDurLog(t, durLog()), "n2": writeDurLog(t, durLog())}
	acks := append(append([]Ack{}, durAcks...), Ack{"a", "w9", 2, 50})
	r := Durability(nodes, acks)
	wantDurViolations(t, r, "lost acknowledged acquisition key=a holder=w9 token=2 on node n1",
		"lost acknowledged acquisition key=a holder=w9 token=2 on node n2")
	if len(r.Violations) != 2 {
		t.Fatalf("want exactly the two lost acks, got:\n%s", r)
	}
}

func TestDurabilityCommittedDivergence(t *testing.T) {
	other := durLog()
	// Same grants, different bytes: Time is for display only.
	other[2] = durCmd(3, fsm.Acquire{Key: "a", Holder: "w1", TTL: time.Second, Time: 99})
	nodes := map[string]string{"n1": writeDurLog(t, durLog()), "n2": writeDurLog(t, durLog()), "n3": writeDurLog(t, other)}
	r := Durability(nodes, durAcks)
	wantDurViolations(t, r, "nodes n1 and n3 disagree at committed index 3", "nodes n2 and n3 disagree at committed index 3")
	if len(r.Violations) != 2 {
		t.Fatalf("want only the two divergences, got:\n%s", r)
	}
}

func TestDurabilityUncommittedDivergence(t *testing.T) {
	tail := func(holder string, term uint64) []*raft.Log {
		l := durCmd(8, fsm.Acquire{Key: "c", Holder: holder, TTL: time.Second})
		l.Term = term
		return append(durLog(), l)
	}
	// Index 8 is held by two of five nodes only, so it is not committed.
	nodes := map[string]string{
		"n1": writeDurLog(t, tail("x", 2)), "n2": writeDurLog(t, tail("y", 3)),
		"n3": writeDurLog(t, durLog()), "n4": writeDurLog(t, durLog()), "n5": writeDurLog(t, durLog()),
	}
	wantDurViolations(t, Durability(nodes, durAcks))
	// Three nodes hold index 8, but in two terms: the old tail of n1 may
	// still be overwritten, so it is no violation either.
	nodes["n3"] = writeDurLog(t, tail("y", 3))
	wantDurViolations(t, Durability(nodes, durAcks))
	// Once the logs agree at a later index, in one term, every earlier
	// entry must be identical (Log Matching): index 8 now is a violation.
	next := durCmd(9, fsm.Release{Key: "c", Holder: "y", Token: 4})
	next.Term = 3
	nodes["n1"] = writeDurLog(t, append(tail("x", 2), next))
	nodes["n2"] = writeDurLog(t, append(tail("y", 3), next))
	nodes["n3"] = writeDurLog(t, append(tail("y", 3), next))
	wantDurViolations(t, Durability(nodes, durAcks), "nodes n1 and n2 disagree at committed index 8: term 2 vs 3")
}

func TestDurabilitySnapshotCovers(t *testing.T) {
	logs := durLog()
	compacted := writeDurLog(t, logs[4:]) // entries 5..7 only
	writeDurSnapshot(t, compacted, logs[:4])
	overlapping := writeDurLog(t, logs) // trailing entries kept below the snapshot
	writeDurSnapshot(t, overlapping, logs[:4])
	nodes := map[string]string{"n1": compacted, "n2": overlapping}
	r := Durability(nodes, durAcks)
	wantDurViolations(t, r)
	if !strings.Contains(r.String(), "node n1: snapshot index 4, log 5..7, 1 grants replayed, final token 3") {
		t.Fatalf("missing per-node note:\n%s", r)
	}
	// The snapshot's counter covers token 1, but not for another holder.
	r = Durability(nodes, append(append([]Ack{}, durAcks...), Ack{"a", "w9", 1, 50}))
	wantDurViolations(t, r, "lost acknowledged acquisition key=a holder=w9 token=1 on node n1")
}

func TestDurabilityCounterBehind(t *testing.T) {
	nodes := map[string]string{"n1": writeDurLog(t, durLog()[:4])}
	r := Durability(nodes, durAcks)
	wantDurViolations(t, r, "node n1: final token counter 2 is below the highest acknowledged token 3",
		"lost acknowledged acquisition key=a holder=w3 token=3 on node n1")
}

func TestDurabilityMissingDir(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone")
	r := Durability(map[string]string{"n1": writeDurLog(t, durLog()), "n2": missing}, durAcks)
	wantDurViolations(t, r, "node n2: cannot read its Raft state in "+missing)
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("the check created %s: %v", missing, err)
	}
}

func TestDurabilityLockedStore(t *testing.T) {
	defer func(d time.Duration) { boltTimeout = d }(boltTimeout)
	boltTimeout = 100 * time.Millisecond
	dir := writeDurLog(t, durLog())
	held, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, raftDBFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	start := time.Now()
	r := Durability(map[string]string{"n1": dir}, durAcks)
	wantDurViolations(t, r, "node n1: cannot read its Raft state", "timeout")
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v with the lock held", d)
	}
}

func TestDurabilityUndecodableEntry(t *testing.T) {
	logs := append(durLog(), &raft.Log{Index: 8, Term: 1, Type: raft.LogCommand, Data: []byte{0x7f, 1}})
	r := Durability(map[string]string{"n1": writeDurLog(t, logs)}, durAcks)
	wantDurViolations(t, r, "node n1: cannot read its Raft state", "index 8")
}

// A follower that installed a snapshot keeps old entries compaction did
// not reach, then a hole up to the snapshot, then new entries: the hole is
// covered by the snapshot, not a loss. A hole above the snapshot is.
func TestDurabilityHoleBelowSnapshot(t *testing.T) {
	logs := durLog()
	holed := writeDurLog(t, append(append([]*raft.Log{}, logs[:2]...), logs[4:]...)) // 1..2, 5..7
	writeDurSnapshot(t, holed, logs[:4])
	full := writeDurLog(t, logs)
	wantDurViolations(t, Durability(map[string]string{"n1": holed, "n2": full}, durAcks))

	lost := writeDurLog(t, append(append([]*raft.Log{}, logs[:2]...), logs[5:]...)) // 1..2, 6..7: 5 missing
	writeDurSnapshot(t, lost, logs[:4])
	wantDurViolations(t, Durability(map[string]string{"n1": lost, "n2": full}, durAcks), "log entry 5")
}

// Entries kept below an installed snapshot may be a deposed leader's
// uncommitted tail: they are not compared when the entry at the snapshot's
// index is not the snapshot's.
func TestDurabilityStaleTailBelowSnapshot(t *testing.T) {
	logs := durLog()
	stale := []*raft.Log{logs[0], {Index: 2, Term: 9, Type: raft.LogCommand, Data: fsm.Encode(fsm.Release{Key: "zz", Holder: "x", Token: 1})}}
	node := writeDurLog(t, append(stale, logs[4:]...)) // 1, stale 2, hole 3..4, 5..7
	writeDurSnapshot(t, node, logs[:4])
	full := writeDurLog(t, logs)
	wantDurViolations(t, Durability(map[string]string{"n1": node, "n2": full, "n3": full}, durAcks))
}
