package backup

import "github.com/tenure-io/tenure/fsm"

// RestoreResult says what a restore read and what the cluster holds now.
type RestoreResult struct {
	// Snapshot is what the backup held as it was read.
	Snapshot fsm.SnapshotInfo
	// Restored is the state the cluster took: the backup's leases, with
	// the cluster's id, its token counter if higher, the keys whose last
	// token is higher in the running cluster (fsm.RestoreTarget), the
	// running ACL state unless RestoreOptions.ACL, and the index of the
	// restore.
	Restored fsm.SnapshotInfo
	// Verified: the backup is signed by this cluster's backup key.
	Verified bool
	// Replicated: a quorum of servers had installed the restored state
	// when the call returned. When false, the leader had, and the others
	// get it as Raft catches them up.
	Replicated bool
}

// RestoreOptions say how the node's RestoreSnapshot treats a backup.
type RestoreOptions struct {
	// TokenFloor raises the token counter to at least this: for a backup
	// of another cluster (one built anew after a disaster), which has
	// handed out tokens the new cluster never saw, pass the old cluster's
	// last token, or a bound of it.
	TokenFloor uint64
	// ACL restores the backup's ACL state (tokens, policies, worker
	// registrations). Without it the running ACL state stays: the API
	// sets it only for a caller with the acl right.
	ACL bool
	// Unverified takes a backup that this cluster's backup key did not
	// sign: one of another cluster, an edited one, or one written by a
	// build before signed backups. Without it such a backup is refused
	// (an *check.InvalidError wrapping fsm.ErrUnverifiedBackup). The API lets
	// only a caller with the acl right set it.
	Unverified bool
}
