package check

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/tenure-io/tenure/fsm"
)

// Ack is an acquisition the cluster acknowledged to a client.
type Ack struct {
	Key, Holder string
	Token       uint64
	T           int64
}

// WriteOp is the kind of an acknowledged Write.
type WriteOp string

// The writes other than acquisitions that the workloads make.
const (
	// WriteRelease: Holder released Key's lease Token (a 204 answer).
	WriteRelease WriteOp = "release"
	// WriteRevoke: an operator revoked Key (not forced) and the answer
	// named Holder's lease Token among those it ended.
	WriteRevoke WriteOp = "revoke"
	// WriteGroup: the group named Key was created or replaced.
	WriteGroup WriteOp = "group"
)

// Write is a write other than an acquisition that the cluster
// acknowledged to a client, at T.
type Write struct {
	Op          WriteOp
	Key, Holder string // Key is the group's name for WriteGroup
	Token       uint64
	T           int64
}

// The data-dir layout that package cluster writes: the bolt log and stable
// store, and the directory raft.FileSnapshotStore keeps under the data dir.
const (
	raftDBFile   = "raft.db"
	snapshotsDir = "snapshots"
)

// boltTimeout bounds the wait for the bolt file lock: a server that still
// runs, or a lock left behind, makes the node an error instead of a hang.
var boltTimeout = 2 * time.Second

// ackedGrant is a lease an Acquire gave (or kept): key, holder and token.
type ackedGrant struct {
	key, holder string
	token       uint64
}

// logEntry is what the log comparison needs of one Raft log entry.
type logEntry struct {
	term    uint64
	data    []byte
	missing bool // a hole at or below the snapshot index
}

// durNode is one node's Raft state, replayed through a fresh machine.
type durNode struct {
	name        string
	snapIndex   uint64
	first, last uint64     // 0, 0 for an empty log
	entries     []logEntry // entries[i] is index first+i
	grants      map[ackedGrant]bool
	replayed    int                 // Granted results of the replay
	snapCovers  map[ackedGrant]bool // acks the snapshot alone accounts for
	finalToken  uint64
	// Writes other than acquisitions: those the snapshot accounts for,
	// the commands of the replayed log, and those whose effect the final
	// state undoes (their violation).
	writeCovers map[Write]bool
	releases    map[ackedGrant]bool // Release commands replayed
	ends        map[string]bool     // keys of End commands (revoke) replayed
	groupPuts   map[string]bool     // groups created or replaced by the replay
	undone      map[Write]string
}

// Durability reads each stopped server's Raft state and checks that no
// acknowledged write was lost: acquisitions (acked) and every other write
// the workloads make (writes: releases, revokes, group creations).
//
// nodes maps a node name to its data dir as package cluster lays it out
// (raft.db and snapshots/). Every file is opened read-only and nothing is
// left behind, so the servers must be stopped; a bolt lock that is not released
// within two seconds makes that node a violation. For each node the newest
// readable snapshot is restored into a fresh fsm.Machine and every
// raft.LogCommand entry after it is replayed in order. Violations:
//
//   - an Ack that the node neither granted (or kept) during the replay nor
//     accounts for in its snapshot. The snapshot accounts for it when its
//     token counter is at least the Ack's token and it has a record of the
//     key (fsm never forgets a key) whose token is above the Ack's, or
//     equal to it with the Ack's holder. Checked on every node, so the
//     servers must have caught up before they were stopped;
//   - two nodes whose entries at the same index differ in term or data at
//     an index both hold and that is committed. Commitment is approximated:
//     the readable nodes' last indexes sorted in descending order, the one
//     at position len/2 (0-based) is an index that a majority holds, and
//     every index up to it counts as committed;
//   - a node whose final token counter is below the highest acknowledged
//     token;
//   - a Write whose command the node's replayed log does not hold and
//     whose effect its snapshot does not account for: a release needs a
//     Release of (key, holder, token); a revoke an End of the key (not of
//     a holder); a group a GroupPut or GroupPutCAS of its name. The
//     snapshot accounts for a release when its token counter is at least
//     the token and its record of the key has a higher token, or this
//     token and is free, or there is no record (only free keys are
//     forgotten); for a revoke likewise, or this token still held but
//     ending; for a group when it has the group;
//   - a Write that the node's final state undoes: the released lease
//     (key, token) held, the revoked one held and not ending, the group
//     absent. No workload deletes a group or gives a released or revoked
//     lease back, so nothing legal undoes them;
//   - a node whose state cannot be read, naming the error.
//
// Notes give, per node, the snapshot index, the log's first and last
// index, the grants replayed and the final token counter.
func Durability(nodes map[string]string, acked []Ack, writes []Write) Result {
	v := newVerdict("durability")
	v.Ops = len(acked) + len(writes)
	// Distinct acks, each with its first acknowledgement time.
	first := map[ackedGrant]int64{}
	var order []ackedGrant
	var maxToken uint64
	c := clock{}
	timed := false
	at := func(t int64) {
		if !timed || t < c.t0 {
			c.t0, timed = t, true
		}
	}
	for _, a := range acked {
		at(a.T)
		g := ackedGrant{a.Key, a.Holder, a.Token}
		if t, ok := first[g]; !ok {
			order = append(order, g)
			first[g] = a.T
		} else if a.T < t {
			first[g] = a.T
		}
		maxToken = max(maxToken, a.Token)
	}
	byOp := map[WriteOp]int{}
	for _, w := range writes {
		at(w.T)
		byOp[w.Op]++
	}
	v.note("%d acknowledged acquisitions, %d releases, %d revokes, %d group creations checked",
		len(acked), byOp[WriteRelease], byOp[WriteRevoke], byOp[WriteGroup])
	var read []*durNode
	for _, name := range slices.Sorted(maps.Keys(nodes)) {
		n, err := readDurNode(name, nodes[name], order, writes)
		if err != nil {
			v.fail("node %s: cannot read its Raft state in %s: %v", name, nodes[name], err)
			continue
		}
		read = append(read, n)
		v.note("node %s: snapshot index %d, log %d..%d, %d grants replayed, final token %d",
			name, n.snapIndex, n.first, n.last, n.replayed, n.finalToken)
		for _, g := range order {
			if !n.grants[g] && !n.snapCovers[g] {
				v.fail("lost acknowledged acquisition key=%s holder=%s token=%d on node %s (acked at %s)",
					g.key, g.holder, g.token, name, c.ms(first[g]))
			}
		}
		for _, w := range writes {
			if why, ok := n.undone[w]; ok {
				v.fail("acknowledged %s undone on node %s: %s (acked at %s)", w.describe(), name, why, c.ms(w.T))
			} else if !n.writeCovers[w] && !n.replayedWrite(w) {
				v.fail("lost acknowledged %s on node %s: neither its log nor its snapshot holds it (acked at %s)",
					w.describe(), name, c.ms(w.T))
			}
		}
		if n.finalToken < maxToken {
			v.fail("node %s: final token counter %d is below the highest acknowledged token %d",
				name, n.finalToken, maxToken)
		}
	}
	compareDurLogs(v, read)
	return v.done()
}

// readDurNode restores and replays one node's state; acks are checked against
// its snapshot on the way. A panic (a malformed store or entry) is an error.
func readDurNode(name, dir string, acks []ackedGrant, writes []Write) (n *durNode, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = nil, fmt.Errorf("panic while reading: %v", r)
		}
	}()
	if err := requireDurPath(dir, true); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	dbPath := filepath.Join(dir, raftDBFile)
	if err := requireDurPath(dbPath, false); err != nil {
		return nil, fmt.Errorf("log store: %w", err)
	}
	n = &durNode{name: name, grants: map[ackedGrant]bool{}, snapCovers: map[ackedGrant]bool{},
		writeCovers: map[Write]bool{}, releases: map[ackedGrant]bool{}, ends: map[string]bool{},
		groupPuts: map[string]bool{}, undone: map[Write]string{}}
	m := fsm.New()
	var snapTerm uint64
	if n.snapIndex, snapTerm, err = restoreNewestSnapshot(dir, m); err != nil {
		return nil, err
	}
	if counter := m.LastToken(); n.snapIndex > 0 {
		for _, g := range acks {
			l := m.Get(g.key)
			if counter >= g.token && l != nil && (l.Token > g.token || l.Token == g.token && l.Holder == g.holder) {
				n.snapCovers[g] = true
			}
		}
		for _, w := range writes {
			n.writeCovers[w] = snapshotCovers(m, counter, w)
		}
	}
	store, err := raftboltdb.New(raftboltdb.Options{
		Path:        dbPath,
		BoltOptions: &bbolt.Options{ReadOnly: true, Timeout: boltTimeout},
	})
	if err != nil {
		return nil, fmt.Errorf("open %s read-only: %w", dbPath, err)
	}
	defer store.Close()
	if n.first, err = store.FirstIndex(); err != nil {
		return nil, fmt.Errorf("first index: %w", err)
	}
	if n.last, err = store.LastIndex(); err != nil {
		return nil, fmt.Errorf("last index: %w", err)
	}
	if n.last > n.snapIndex && n.first > n.snapIndex+1 {
		return nil, fmt.Errorf("log starts at index %d but the snapshot ends at %d: entries are missing", n.first, n.snapIndex)
	}
	for i := n.first; n.last > 0 && i <= n.last; i++ {
		var l raft.Log
		if err := store.GetLog(i, &l); err != nil {
			// A follower that installed a snapshot keeps the old entries
			// that compaction did not reach, with a hole up to the
			// snapshot: the snapshot covers it. A hole above it is a loss.
			if errors.Is(err, raft.ErrLogNotFound) && i <= n.snapIndex {
				n.entries = append(n.entries, logEntry{missing: true})
				continue
			}
			return nil, fmt.Errorf("log entry %d: %w", i, err)
		}
		n.entries = append(n.entries, logEntry{term: l.Term, data: l.Data})
		if i <= n.snapIndex || l.Type != raft.LogCommand {
			continue
		}
		if err := n.collect(i, m.Apply(&l)); err != nil {
			return nil, err
		}
		if err := n.collectCommands(i, l.Data); err != nil {
			return nil, err
		}
	}
	n.finalToken = m.LastToken()
	for _, w := range writes {
		if why := undoes(m, w); why != "" {
			n.undone[w] = why
		}
	}
	n.hideStaleBelowSnapshot(snapTerm)
	return n, nil
}

// hideStaleBelowSnapshot keeps entries at or below the snapshot out of the
// comparison of logs unless the entry at the snapshot's index has the
// snapshot's term: a follower that installed a snapshot keeps the old
// entries compaction did not reach, and those may be the uncommitted tail
// of a deposed leader. The snapshot covers that range instead.
func (n *durNode) hideStaleBelowSnapshot(snapTerm uint64) {
	if n.snapIndex == 0 || n.snapIndex < n.first {
		return
	}
	if i := n.snapIndex - n.first; i < uint64(len(n.entries)) && !n.entries[i].missing && n.entries[i].term == snapTerm {
		return
	}
	for i := range n.entries {
		if n.first+uint64(i) <= n.snapIndex {
			n.entries[i] = logEntry{missing: true}
		}
	}
}

// collect records the grants of one applied entry: fsm.Machine.Apply
// returns an fsm.Result for a command and a []fsm.Result for a batch.
func (n *durNode) collect(index uint64, out interface{}) error {
	var results []fsm.Result
	switch r := out.(type) {
	case fsm.Result:
		results = []fsm.Result{r}
	case []fsm.Result:
		results = r
	default:
		return fmt.Errorf("log entry %d: unexpected apply result %T", index, out)
	}
	for _, r := range results {
		if r.Lease == nil || (r.Code != fsm.Granted && r.Code != fsm.Kept) {
			continue
		}
		if r.Code == fsm.Granted {
			n.replayed++
		}
		n.grants[ackedGrant{r.Lease.Key, r.Lease.Holder, r.Lease.Token}] = true
	}
	return nil
}

// restoreNewestSnapshot restores the newest snapshot that opens and decodes into m,
// as Raft does at start-up, and returns its index (0: no snapshot). The
// snapshot store is only opened when its directory exists, because
// raft.NewFileSnapshotStore creates it; its permission probe creates and
// removes one file, and List and Open change nothing.
func restoreNewestSnapshot(dir string, m *fsm.Machine) (index, term uint64, err error) {
	if _, err := os.Stat(filepath.Join(dir, snapshotsDir)); errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 1<<20, hclog.NewNullLogger())
	if err != nil {
		return 0, 0, fmt.Errorf("snapshot store: %w", err)
	}
	metas, err := snaps.List()
	if err != nil {
		return 0, 0, fmt.Errorf("list snapshots: %w", err)
	}
	var errs []error
	for _, meta := range metas {
		_, rc, err := snaps.Open(meta.ID)
		if err == nil {
			err = m.Restore(rc) // closes rc
		}
		if err == nil {
			return meta.Index, meta.Term, nil
		}
		errs = append(errs, fmt.Errorf("snapshot %s: %w", meta.ID, err))
	}
	return 0, 0, errors.Join(errs...)
}

// requireDurPath fails unless path exists and is a directory exactly when
// dir is true.
func requireDurPath(path string, dir bool) error {
	fi, err := os.Stat(path)
	if err == nil && fi.IsDir() != dir {
		err = fmt.Errorf("%s: unexpected file type %v", path, fi.Mode().Type())
	}
	return err
}
