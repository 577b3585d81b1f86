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
	"github.com/tenure-io/tenure/cluster/internal/backup"
	"github.com/tenure-io/tenure/fsm"
)

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

// awaitRestore waits, before a leader establishes, until no restore holds
// writes back, and reports false if ctx ended first. A leader that
// establishes puts a barrier in the log; during a restore that would move
// the log past the index the restore prepared its snapshot for, and the
// restore would have to give up (a 39 MB backup takes longer to prepare
// than the lead loop waits between attempts to establish).
func (n *Node) awaitRestore(ctx context.Context) bool {
	for n.restore.on.Load() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
	return ctx.Err() == nil
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

// RestoreResult says what a restore read and what the cluster holds now
// (backup.RestoreResult).
type RestoreResult = backup.RestoreResult

// RestoreOptions say how RestoreSnapshot treats a backup
// (backup.RestoreOptions).
type RestoreOptions = backup.RestoreOptions

// RestoreSnapshot replaces the state of the whole cluster with backup b,
// through Raft: this leader stops serving, holds every write back, waits
// until everything in its log is applied, and reads its state; the
// backup is then installed with what the running state keeps
// (fsm.RestoreTarget: the larger token counter, this cluster's id, term
// and backup key, its held leases, each key's higher last token, and its
// ACL state unless opts.ACL), on this node first and on every follower by
// Raft's snapshot install. The leader then establishes again, with every
// held lease of the backup at a full TTL from now, as after a failover.
// No token is ever handed out twice, and a key's tokens never go
// backwards: a key whose last token is higher now than in the backup
// comes back free with that token, and a held lease of the backup whose
// key the running state has no record of (forgotten by free-key
// retention, or a new cluster) comes back free with its token. No key
// changes hands either: a lease held when the restore runs stays with
// its holder.
func (n *Node) RestoreSnapshot(ctx context.Context, b []byte, opts RestoreOptions) (RestoreResult, error) {
	if !n.IsLeader() {
		return RestoreResult{}, ErrNotLeader
	}
	if n.leading.Load() == nil {
		return RestoreResult{}, ErrNotReady
	}
	bk, err := fsm.ReadBackup(b)
	if err != nil {
		return RestoreResult{}, &InvalidError{Field: "snapshot", Err: err}
	}
	info := bk.Info
	verr := n.machine.VerifyBackup(bk)
	if verr != nil && !opts.Unverified {
		return RestoreResult{}, &InvalidError{Field: "snapshot", Err: fmt.Errorf("%w; to restore it all the same, ask for an unverified restore (tenure snapshot restore -unverified, PUT /v1/snapshot?unverified=true, which need the acl right)", verr)}
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
	//lint:ignore SA2001 a barrier: it waits until no entry is being handed to Raft
	n.restore.mu.Unlock()
	open := sync.OnceFunc(func() { n.restore.on.Store(false) })
	defer open()
	old := n.leading.Load() // read with writes held back: no establish can finish now
	if old == nil {
		return RestoreResult{}, ErrNotReady
	}
	// No renewal or expiry from here on: the leader establishes again
	// after, and not before the restore lets writes through (awaitRestore).
	old.halt()
	if err := n.raft.Barrier(limit).Error(); err != nil {
		return RestoreResult{}, fmt.Errorf("%w: barrier before the restore: %w", ErrLeadershipLost, err)
	}
	term, last := n.raft.CurrentTerm(), n.raft.LastIndex()
	target := n.machine.RestoreTarget(last+1, term)
	target.LastToken = max(target.LastToken, opts.TokenFloor)
	target.KeepACL = !opts.ACL
	target.Leases = backup.Keeps(target.Leases)
	data, restored, err := bk.Prepare(target)
	if err != nil {
		return RestoreResult{}, &InvalidError{Field: "snapshot", Err: err}
	}
	// The counter read above must still be the highest: nothing may have
	// reached the log meanwhile (a leader of a newer term, or this one
	// again after losing leadership, would have granted tokens), or the
	// state machine would refuse the snapshot, and Raft panic.
	if nowTerm, nowLast := n.raft.CurrentTerm(), n.raft.LastIndex(); !n.IsLeader() || nowTerm != term || nowLast != last {
		return RestoreResult{}, fmt.Errorf("%w: leadership changed while the snapshot was prepared (term %d, then %d; last index %d, then %d; leader now: %t); nothing restored",
			ErrLeadershipLost, term, nowTerm, last, nowLast, n.IsLeader())
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
	n.log.Warn("snapshot_restored", "leases", restored.Leases, "held", restored.Held, "last_token", restored.LastToken,
		"from_index", info.Index, "from_cluster", info.ClusterID, "verified", verr == nil, "acl_restored", opts.ACL,
		"index", target.Index, "replicated", replicated, "raft_error", restoreErr, "took", time.Since(start).Round(time.Millisecond))
	return RestoreResult{Snapshot: info, Restored: restored, Verified: verr == nil, Replicated: replicated}, nil
}

// BackupFile is one backup of a backup directory.
type BackupFile = backup.File

// ListBackups reads every backup of dir (the files Config.BackupDir
// gets), oldest first, checking each.
func ListBackups(dir string) ([]BackupFile, error) { return backup.List(dir) }

// runBackups writes a backup to BackupDir every BackupInterval while this
// node leads, and keeps the BackupKeep newest (backup.Schedule). It ends
// at Shutdown.
func (n *Node) runBackups() {
	defer n.wg.Done()
	s := &backup.Schedule{
		Dir: n.cfg.BackupDir, Interval: n.cfg.BackupInterval, Keep: n.cfg.BackupKeep,
		Leading:   func() bool { return n.leading.Load() != nil },
		Backup:    n.Backup,
		WriteFile: WriteFileDurably,
		Written: func() {
			n.metrics.Backups.WithLabelValues("written").Inc()
			n.metrics.LastBackup.SetToCurrentTime()
		},
		Failed: func() { n.metrics.Backups.WithLabelValues("failed").Inc() },
		Log:    n.log,
	}
	s.Run(n.shutdownCh)
}
