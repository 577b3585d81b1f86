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
	r := Durability(nodes, durAcks, nil)
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
	r := Durability(nodes, acks, nil)
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
	r := Durability(nodes, durAcks, nil)
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
	wantDurViolations(t, Durability(nodes, durAcks, nil))
	// Three nodes hold index 8, but in two terms: the old tail of n1 may
	// still be overwritten, so it is no violation either.
	nodes["n3"] = writeDurLog(t, tail("y", 3))
	wantDurViolations(t, Durability(nodes, durAcks, nil))
	// Once the logs agree at a later index, in one term, every earlier
	// entry must be identical (Log Matching): index 8 now is a violation.
	next := durCmd(9, fsm.Release{Key: "c", Holder: "y", Token: 4})
	next.Term = 3
	nodes["n1"] = writeDurLog(t, append(tail("x", 2), next))
	nodes["n2"] = writeDurLog(t, append(tail("y", 3), next))
	nodes["n3"] = writeDurLog(t, append(tail("y", 3), next))
	wantDurViolations(t, Durability(nodes, durAcks, nil), "nodes n1 and n2 disagree at committed index 8: term 2 vs 3")
}

func TestDurabilitySnapshotCovers(t *testing.T) {
	logs := durLog()
	compacted := writeDurLog(t, logs[4:]) // entries 5..7 only
	writeDurSnapshot(t, compacted, logs[:4])
	overlapping := writeDurLog(t, logs) // trailing entries kept below the snapshot
	writeDurSnapshot(t, overlapping, logs[:4])
	nodes := map[string]string{"n1": compacted, "n2": overlapping}
	r := Durability(nodes, durAcks, nil)
	wantDurViolations(t, r)
	if !strings.Contains(r.String(), "node n1: snapshot index 4, log 5..7, 1 grants replayed, final token 3") {
		t.Fatalf("missing per-node note:\n%s", r)
	}
	// The snapshot's counter covers token 1, but not for another holder.
	r = Durability(nodes, append(append([]Ack{}, durAcks...), Ack{"a", "w9", 1, 50}), nil)
	wantDurViolations(t, r, "lost acknowledged acquisition key=a holder=w9 token=1 on node n1")
}

func TestDurabilityCounterBehind(t *testing.T) {
	nodes := map[string]string{"n1": writeDurLog(t, durLog()[:4])}
	r := Durability(nodes, durAcks, nil)
	wantDurViolations(t, r, "node n1: final token counter 2 is below the highest acknowledged token 3",
		"lost acknowledged acquisition key=a holder=w3 token=3 on node n1")
}

func TestDurabilityMissingDir(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone")
	r := Durability(map[string]string{"n1": writeDurLog(t, durLog()), "n2": missing}, durAcks, nil)
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
	r := Durability(map[string]string{"n1": dir}, durAcks, nil)
	wantDurViolations(t, r, "node n1: cannot read its Raft state", "timeout")
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v with the lock held", d)
	}
}

func TestDurabilityUndecodableEntry(t *testing.T) {
	logs := append(durLog(), &raft.Log{Index: 8, Term: 1, Type: raft.LogCommand, Data: []byte{0x7f, 1}})
	r := Durability(map[string]string{"n1": writeDurLog(t, logs)}, durAcks, nil)
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
	wantDurViolations(t, Durability(map[string]string{"n1": holed, "n2": full}, durAcks, nil))

	lost := writeDurLog(t, append(append([]*raft.Log{}, logs[:2]...), logs[5:]...)) // 1..2, 6..7: 5 missing
	writeDurSnapshot(t, lost, logs[:4])
	wantDurViolations(t, Durability(map[string]string{"n1": lost, "n2": full}, durAcks, nil), "log entry 5")
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
	wantDurViolations(t, Durability(map[string]string{"n1": node, "n2": full, "n3": full}, durAcks, nil))
}

// durWriteLog is durLog, then an operator's revoke of b (token 2, still
// held but ending) and the creation of group g: with durLog's release of
// a (w1, token 1) every kind of write the workloads make.
func durWriteLog() []*raft.Log {
	return append(durLog(),
		durCmd(8, fsm.End{Key: "b"}),
		durCmd(9, fsm.GroupPut{Name: "g", Keys: []string{"p0", "p1"}}))
}

// durWrites are the writes durWriteLog holds, acknowledged.
var durWrites = []Write{
	{Op: WriteRelease, Key: "a", Holder: "w1", Token: 1, T: 25},
	{Op: WriteRevoke, Key: "b", Holder: "w2", Token: 2, T: 45},
	{Op: WriteGroup, Key: "g", T: 5},
}

// Every acknowledged write in every node's log, or accounted for by its
// snapshot (an ending lease for the revoke, the group in the snapshot):
// no violation.
func TestDurabilityWritesPresent(t *testing.T) {
	logs := durWriteLog()
	compacted := writeDurLog(t, logs[8:]) // entry 9 only
	writeDurSnapshot(t, compacted, logs[:8])
	snapOnly := writeDurLog(t, nil)
	writeDurSnapshot(t, snapOnly, logs)
	nodes := map[string]string{"n1": writeDurLog(t, logs), "n2": compacted, "n3": writeDurLog(t, logs), "n4": snapOnly}
	r := Durability(nodes, durAcks, durWrites)
	wantDurViolations(t, r)
	if r.Ops != len(durAcks)+len(durWrites) {
		t.Fatalf("examined %d, want %d acks and writes", r.Ops, len(durAcks)+len(durWrites))
	}
}

// Negative controls: histories in which an acknowledged release, revoke
// or group creation is missing from the logs (and not accounted for by a
// snapshot), or undone by the final state, as a build that acknowledged
// writes it never logged would leave them: every node's log is the same,
// so only the writes show the loss, on every node.
func TestDurabilityLostWrites(t *testing.T) {
	without := func(drop uint64, extra ...*raft.Log) []*raft.Log {
		var out []*raft.Log
		for _, l := range durWriteLog() {
			if l.Index != drop {
				out = append(out, l)
			} else {
				out = append(out, &raft.Log{Index: l.Index, Term: l.Term, Type: raft.LogNoop})
			}
		}
		return append(out, extra...)
	}
	cases := []struct {
		name string
		logs []*raft.Log
		want string
	}{
		{
			// The release of a/w1 at index 4 replaced by an expiry: the
			// key is free all the same, so only the log shows the loss.
			name: "release missing from the log",
			logs: func() []*raft.Log {
				logs := durWriteLog()
				logs[3] = durCmd(4, fsm.Batch{Commands: []fsm.Command{
					fsm.Acquire{Key: "b", Holder: "w2", TTL: time.Second},
					fsm.Expire{Key: "a", Token: 1, Term: 1},
				}})
				return logs
			}(),
			want: "lost acknowledged release key=a holder=w1 token=1 on node n2",
		},
		{
			name: "release undone: the lease held at the end",
			logs: durWriteLog(),
			want: "acknowledged release key=a holder=w3 token=3 undone on node n2: the lease is held by w3 under token 3 at the end",
		},
		{
			// b freed by its holder instead: the revoke is lost although
			// its lease is gone.
			name: "revoke missing from the log",
			logs: without(8, durCmd(10, fsm.Release{Key: "b", Holder: "w2", Token: 2})),
			want: "lost acknowledged revoke key=b holder=w2 token=2 on node n2",
		},
		{
			name: "revoke undone: the lease held, not ending, at the end",
			logs: without(8),
			want: "acknowledged revoke key=b holder=w2 token=2 undone on node n2: the lease is held by w2 under token 2, not ending, at the end",
		},
		{
			name: "group missing",
			logs: without(9),
			want: "acknowledged group creation group=g undone on node n2: the group does not exist at the end",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			writes := durWrites
			if strings.HasPrefix(tc.name, "release undone") {
				// w3's lease (token 3) acknowledged as released, but
				// every log leaves it held.
				writes = append(append([]Write{}, durWrites...), Write{Op: WriteRelease, Key: "a", Holder: "w3", Token: 3, T: 60})
			}
			nodes := map[string]string{"n1": writeDurLog(t, tc.logs), "n2": writeDurLog(t, tc.logs)}
			r := Durability(nodes, durAcks, writes)
			wantDurViolations(t, r, tc.want, strings.Replace(tc.want, "on node n2", "on node n1", 1))
			if len(r.Violations) != 2 {
				t.Errorf("want the one lost write on each node, got:\n%s", r)
			}
		})
	}
}
