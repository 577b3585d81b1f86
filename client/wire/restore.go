package wire

// RestoreResult is the answer to a restore: what the snapshot held, and
// what the cluster holds after it (the cluster's id, a token counter never
// below the one it had, and the leases held at the restore kept).
type RestoreResult struct {
	Snapshot SnapshotContents `json:"snapshot"`
	Restored SnapshotContents `json:"restored"`
	// Verified: the backup is signed by this cluster's backup key. A
	// backup that is not is restored only when asked for
	// (RestoreOptions.Unverified).
	Verified bool `json:"verified"`
	// ACLRestored: the backup's ACL state (tokens, policies, worker
	// registrations) replaced the cluster's; only for a token with the
	// acl right. Otherwise the cluster's ACL state stayed as it was.
	ACLRestored bool `json:"acl_restored"`
	// Replicated: a quorum of servers had the restored state and the
	// leader served again when the answer was sent. When false, the
	// leader had restored it; the others get it as Raft catches them up.
	Replicated bool `json:"replicated"`
}
