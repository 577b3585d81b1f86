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

// restoreTimeout bounds a restore whose context has no deadline.
const restoreTimeout = 5 * time.Minute

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
}

// RestoreSnapshot replaces the state of the whole cluster with snapshot
// b, through Raft: this leader stops serving, holds every write back,
// waits until everything in its log is applied, and reads its token
// counter; the snapshot is then installed with that counter (or the
// snapshot's, or tokenFloor, the largest) and this cluster's id, on this
// node first and on every follower by Raft's snapshot install. The leader
// then establishes again, with every held lease of the snapshot at a full
// TTL from now, as after a failover. No token is ever handed out twice:
// the next grant's token is above every token handed out before the
// backup and since. No key changes hands either: a lease held when the
// restore runs stays with its holder (fsm.RestoreTarget.Held).
//
// A snapshot from another cluster (one built anew after a disaster) has
// handed out tokens the new cluster never saw after its backup: pass the
// old cluster's last token, or a bound of it, as tokenFloor.
func (n *Node) RestoreSnapshot(ctx context.Context, b []byte, tokenFloor uint64) (RestoreResult, error) {
	if !n.IsLeader() {
		return RestoreResult{}, ErrNotLeader
	}
	old := n.leading.Load()
	if old == nil {
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
	start := time.Now()
	n.restore.on.Store(true)
	n.restore.mu.Lock() // every entry handed to Raft before is in its log
	n.restore.mu.Unlock()
	defer n.restore.on.Store(false)
	old.halt() // no renewal or expiry from here on: the leader establishes again after
	// Raft's restore waits until a quorum has installed the snapshot:
	// minutes for a large one on a slow network.
	timeout := restoreTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if err := n.raft.Barrier(timeout).Error(); err != nil {
		return RestoreResult{}, fmt.Errorf("%w: barrier before the restore: %w", ErrLeadershipLost, err)
	}
	if !n.IsLeader() {
		return RestoreResult{}, ErrNotLeader
	}
	last := n.raft.LastIndex()
	target := fsm.RestoreTarget{LastToken: max(n.machine.LastToken(), tokenFloor), ClusterID: n.machine.ClusterID(),
		Index: last + 1, Term: n.raft.CurrentTerm(), Held: n.machine.Held()}
	data, _, err := fsm.PrepareRestore(b, target)
	if err != nil {
		return RestoreResult{}, &InvalidError{Field: "snapshot", Err: err}
	}
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: last, Term: target.Term, Size: int64(len(data))}
	if err := n.raft.Restore(meta, bytes.NewReader(data), timeout); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return RestoreResult{}, fmt.Errorf("%w: restore: %w", ErrLeadershipLost, err)
		}
		return RestoreResult{}, fmt.Errorf("restore: %w", err)
	}
	restored, err := fsm.InspectSnapshot(n.machine.Backup())
	if err != nil {
		return RestoreResult{}, fmt.Errorf("read the restored state: %w", err)
	}
	n.log.Warn("snapshot_restored", "leases", restored.Leases, "held", restored.Held, "last_token", restored.LastToken,
		"from_index", info.Index, "from_cluster", info.ClusterID, "index", restored.Index, "took", time.Since(start).Round(time.Millisecond))
	n.restore.on.Store(false)
	// Serve again before answering: the leader establishes with the
	// restored leases (Node.lead), once writes are let through.
	for ctx.Err() == nil && n.IsLeader() {
		if p := n.leading.Load(); p != nil && p != old {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
	return RestoreResult{Snapshot: info, Restored: restored}, nil
}
