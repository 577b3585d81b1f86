package fsm

import "bytes"

// BackupKeyLen is the length of a backup key: an HMAC-SHA256 key.
const BackupKeyLen = 32

// BackupKey gives the cluster the key that signs its backups, once: the
// first one applied sets it for good, every later one changes nothing
// (Refused when it carries another key, Done when it repeats the same).
// The state machine has no randomness: the leader draws the key and
// proposes it when it finds the state machine without one. The key is in
// every Raft snapshot and never in a backup (Machine.Backup), so a backup
// cannot be signed again by whoever holds it.
type BackupKey struct {
	Key []byte
}

func (BackupKey) Type() Type { return TypeBackupKey }

func (c BackupKey) encode(e *encoder) { e.bytes(c.Key) }

// applyBackupKey runs under m.mu.
func (m *Machine) applyBackupKey(c BackupKey) Result {
	return setOnce(len(c.Key) == BackupKeyLen, m.backupKey == nil, bytes.Equal(m.backupKey, c.Key),
		func() { m.backupKey = append([]byte(nil), c.Key...) })
}

// HasBackupKey reports whether a BackupKey command has been applied.
func (m *Machine) HasBackupKey() bool { return rlocked(m, func() bool { return m.backupKey != nil }) }
