package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/fsm"
)

// MaxRestoreSize bounds the snapshot a restore reads (the HTTP body).
// A million held leases make a snapshot of about 63 MB.
const MaxRestoreSize = 512 << 20

// restoreGate holds writes back while a snapshot is restored: no entry
// may reach the log between the moment the restore reads the token
// counter and the moment the restored state replaces the old one, or a
// token handed out in between could be handed out again.
type restoreGate struct {
	on atomic.Bool
	mu sync.RWMutex // held for reading while an entry is handed to Raft
	// one restore at a time
	running sync.Mutex
}

// RestoreTimeout bounds a restore whose context has no deadline, and the
// HTTP API's restore route.
const RestoreTimeout = 5 * time.Minute

var errRestoring = fmt.Errorf("%w: a snapshot is being restored", ErrNotReady)

// enqueue hands data to Raft unless a restore holds writes back.
func (n *Node) enqueue(data []byte) (raft.ApplyFuture, error) {
	if n.restore.on.Load() {
		return nil, errRestoring
	}
	n.restore.mu.RLock()
	defer n.restore.mu.RUnlock()
	if n.restore.on.Load() {
		return nil, errRestoring
	}
	return n.raft.Apply(data, 0), nil
}

// Backup returns a snapshot of the state (fsm format, with its index,
// term and CRC-32C) as of a linearizable read on the leader: it holds
// every write acknowledged before the call.
func (n *Node) Backup(ctx context.Context) ([]byte, error) {
	if err := n.readBarrier(ctx, Linearizable); err != nil {
		return nil, err
	}
	return n.machine.Backup(), nil
}

// RestoreResult says what a restore read and what the cluster holds now.
type RestoreResult struct {
	// Snapshot is what the snapshot held as it was read.
	Snapshot fsm.SnapshotInfo
	// Restored is the state the cluster took: the snapshot's leases, with
	// the cluster's id, its token counter if higher, and the index of the
	// restore.
	Restored fsm.SnapshotInfo
	// Replicated: a quorum of servers had installed the restored state
	// when the call returned. When false, the leader had, and the others
	// get it as Raft catches them up.
	Replicated bool
}

// RestoreSnapshot replaces the state of the whole cluster with snapshot
// b, through Raft: this leader stops serving, holds every write back,
// waits until everything in its log is applied, and reads its token
// counter; the snapshot is then installed with that counter (or the
// snapshot's, or tokenFloor, the largest), this cluster's id and term,
// on this node first and on every follower by Raft's snapshot install.
// The leader then establishes again, with every held lease of the
// snapshot at a full TTL from now, as after a failover. No token is ever
// handed out twice: the next grant's token is above every token handed
// out before the backup and since. No key changes hands either: a lease
// held when the restore runs stays with its holder
// (fsm.RestoreTarget.Held).
//
// A snapshot from another cluster (one built anew after a disaster) has
// handed out tokens the new cluster never saw after its backup: pass the
// old cluster's last token, or a bound of it, as tokenFloor.
func (n *Node) RestoreSnapshot(ctx context.Context, b []byte, tokenFloor uint64) (RestoreResult, error) {
	if !n.IsLeader() {
		return RestoreResult{}, ErrNotLeader
	}
	if n.leading.Load() == nil {
		return RestoreResult{}, ErrNotReady
	}
	info, err := fsm.InspectSnapshot(b)
	if err != nil {
		return RestoreResult{}, &InvalidError{Field: "snapshot", Err: err}
	}
	if !n.restore.running.TryLock() {
		return RestoreResult{}, errRestoring
	}
	defer n.restore.running.Unlock()
	limit := RestoreTimeout
	if d, ok := ctx.Deadline(); ok {
		limit = time.Until(d)
	}
	if limit <= 0 {
		return RestoreResult{}, ctx.Err()
	}
	deadline := time.Now().Add(limit)
	start := time.Now()
	n.restore.on.Store(true)
	n.restore.mu.Lock() // every entry handed to Raft before is in its log
	n.restore.mu.Unlock()
	open := sync.OnceFunc(func() { n.restore.on.Store(false) })
	defer open()
	old := n.leading.Load() // read with writes held back: no establish can finish now
	if old == nil {
		return RestoreResult{}, ErrNotReady
	}
	old.halt() // no renewal or expiry from here on: the leader establishes again after
	if err := n.raft.Barrier(limit).Error(); err != nil {
		return RestoreResult{}, fmt.Errorf("%w: barrier before the restore: %w", ErrLeadershipLost, err)
	}
	term, last := n.raft.CurrentTerm(), n.raft.LastIndex()
	target := fsm.RestoreTarget{LastToken: max(n.machine.LastToken(), tokenFloor), ClusterID: n.machine.ClusterID(),
		Index: last + 1, Term: term, Held: n.machine.Held()}
	data, _, err := fsm.PrepareRestore(b, target)
	if err != nil {
		return RestoreResult{}, &InvalidError{Field: "snapshot", Err: err}
	}
	// The counter read above must still be the highest: nothing may have
	// reached the log meanwhile (a leader of a newer term, or this one
	// again after losing leadership, would have granted tokens), or the
	// state machine would refuse the snapshot, and Raft panic.
	if !n.IsLeader() || n.raft.CurrentTerm() != term || n.raft.LastIndex() != last {
		return RestoreResult{}, fmt.Errorf("%w: leadership changed while the snapshot was prepared; nothing restored", ErrLeadershipLost)
	}
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: last, Term: term, Size: int64(len(data))}
	done := make(chan error, 1)
	go func() {
		// The time limit bounds handing the restore to Raft's leader
		// loop, which a leader does at once: one that lost leadership
		// gives up instead of restoring later, in another term.
		done <- n.raft.Restore(meta, bytes.NewReader(data), max(n.cfg.ElectionTimeout, 50*time.Millisecond))
	}()
	restoredHere := func() bool {
		applied, _, _ := n.machine.Indexes()
		return applied >= target.Index
	}
	var restoreErr error
	for !restoredHere() {
		select {
		case restoreErr = <-done:
			if !restoredHere() {
				if restoreErr == nil {
					restoreErr = errors.New("the state machine did not take the snapshot")
				}
				return RestoreResult{}, fmt.Errorf("nothing restored: %w", restoreErr)
			}
		case <-time.After(5 * time.Millisecond):
		}
	}
	open() // the counter is in place: writes may go on
	// The leader establishes again (Node.lead) once a quorum has the
	// snapshot: its LeaderEstablished commits only then. Serve before
	// answering, within the time limit.
	replicated := false
	for ctx.Err() == nil && n.IsLeader() && time.Now().Before(deadline) {
		if p := n.leading.Load(); p != nil && p != old {
			replicated = true
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
	select {
	case restoreErr = <-done: // raft's own wait for its no-op, done or not
	default:
	}
	restored, err := fsm.InspectSnapshot(n.machine.Backup())
	if err != nil {
		return RestoreResult{}, fmt.Errorf("read the restored state: %w", err)
	}
	n.log.Warn("snapshot_restored", "leases", restored.Leases, "held", restored.Held, "last_token", restored.LastToken,
		"from_index", info.Index, "from_cluster", info.ClusterID, "index", target.Index, "replicated", replicated,
		"raft_error", restoreErr, "took", time.Since(start).Round(time.Millisecond))
	return RestoreResult{Snapshot: info, Restored: restored, Replicated: replicated}, nil
}
