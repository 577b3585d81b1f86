package fsm

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tenure-io/tenure/client/wire"
)

// Backup file format, version 1 (what `tenure snapshot save` writes):
//
//	magic    [4]byte  "TNRB"
//	version  uint16   big endian
//	mac      [32]byte HMAC-SHA256, under the cluster's backup key
//	                  (BackupKey), of magic, version and snapshot
//	snapshot          the state in the snapshot format (snapshot.go),
//	                  with the backup key left out
//
// A file that is a bare snapshot (magic "TNRS") is a backup of a build
// before signed backups, or of a cluster without a backup key yet: it
// reads as unsigned. The key is in every Raft snapshot and never in a
// backup, so whoever holds a backup can neither sign an edited copy nor
// make one that another cluster takes as its own.
const (
	backupMagic   = "TNRB"
	backupVersion = 1
	backupHeader  = 4 + 2
	backupMACLen  = sha256.Size
)

// ErrUnverifiedBackup is wrapped by VerifyBackup's errors: the backup is
// not signed by this cluster's key (another cluster's backup, an edited
// one, or one of a build before signed backups).
var ErrUnverifiedBackup = errors.New("backup not signed by this cluster")

// SnapshotInfo is what a snapshot holds, as `tenure snapshot inspect`
// and the answer of a restore show it (the contract's SnapshotContents).
type SnapshotInfo = wire.SnapshotContents

// Backup encodes the current state as a backup: what `tenure snapshot
// save` writes. It is signed with the cluster's backup key, which it does
// not hold; without a key (none applied yet) it is a bare, unsigned
// snapshot.
func (m *Machine) Backup() []byte {
	s, _ := m.Snapshot()
	snap := s.(*snapshot)
	st := snap.state
	key := st.backupKey
	st.backupKey = nil
	if key == nil {
		return encodeSnapshot(st, snap.index, snap.term)
	}
	// The header, room for the MAC, then the snapshot, in one buffer.
	out := make([]byte, 0, backupHeader+backupMACLen+st.encodedSize())
	out = append(out, backupMagic...)
	out = binary.BigEndian.AppendUint16(out, backupVersion)
	out = append(out, make([]byte, backupMACLen)...)
	out = appendSnapshot(out, st, snap.index, snap.term)
	copy(out[backupHeader:], backupMAC(key, out[:backupHeader], out[backupHeader+backupMACLen:]))
	return out
}

func backupMAC(key, header, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(header)
	h.Write(body)
	return h.Sum(nil)
}

// BackupFile is a backup read and checked (ReadBackup).
type BackupFile struct {
	st          state
	index, term uint64
	// header and mac are nil for a bare snapshot; body is the snapshot.
	header, mac, body []byte
	// Info is what the backup holds.
	Info SnapshotInfo
}

// ReadBackup checks a backup (wrapper, magic, version, checksum, every
// record) and decodes it; a bare snapshot reads as an unsigned backup.
// Its errors wrap ErrBadSnapshot.
func ReadBackup(b []byte) (*BackupFile, error) {
	bk := &BackupFile{body: b}
	if len(b) >= 4 && string(b[:4]) == backupMagic {
		if len(b) < backupHeader+backupMACLen {
			return nil, fmt.Errorf("%w: %d bytes is shorter than a backup header", ErrBadSnapshot, len(b))
		}
		if v := binary.BigEndian.Uint16(b[4:6]); v != backupVersion {
			return nil, fmt.Errorf("%w: backup format version %d, this build reads %d", ErrBadSnapshot, v, backupVersion)
		}
		bk.header, bk.mac, bk.body = b[:backupHeader], b[backupHeader:backupHeader+backupMACLen], b[backupHeader+backupMACLen:]
	}
	st, index, term, err := decodeSnapshot(bk.body)
	if err != nil {
		return nil, err
	}
	if len(st.backupKey) > 0 {
		return nil, fmt.Errorf("%w: a backup never holds a backup key", ErrBadSnapshot)
	}
	bk.st, bk.index, bk.term = st, index, term
	bk.Info = infoOf(st, binary.BigEndian.Uint16(bk.body[4:6]), index, term, bk.body)
	bk.Info.Size, bk.Info.Signed = len(b), bk.mac != nil
	return bk, nil
}

// InspectSnapshot checks a backup or a snapshot (ReadBackup) and says what
// it holds. Its errors wrap ErrBadSnapshot.
func InspectSnapshot(b []byte) (SnapshotInfo, error) {
	bk, err := ReadBackup(b)
	if err != nil {
		return SnapshotInfo{}, err
	}
	return bk.Info, nil
}

// VerifyBackup returns nil if bk is signed with this cluster's backup
// key, and an error wrapping ErrUnverifiedBackup that says why not
// otherwise.
func (m *Machine) VerifyBackup(bk *BackupFile) error {
	m.mu.RLock()
	key := m.backupKey
	m.mu.RUnlock()
	switch {
	case bk.mac == nil:
		return fmt.Errorf("%w: it carries no signature (a backup of a build before signed backups, or a bare snapshot)", ErrUnverifiedBackup)
	case key == nil:
		return fmt.Errorf("%w: this cluster has no backup key yet", ErrUnverifiedBackup)
	case !hmac.Equal(bk.mac, backupMAC(key, bk.header, bk.body)):
		return fmt.Errorf("%w: its signature does not match this cluster's key (a backup of another cluster, or an edited one)", ErrUnverifiedBackup)
	}
	return nil
}

func infoOf(st state, version uint16, index, term uint64, b []byte) SnapshotInfo {
	info := SnapshotInfo{Version: version, Index: index, Term: term, LastToken: st.lastToken,
		Leases: len(st.leases), Groups: len(st.groups), ACLTokens: len(st.acl.tokens),
		ACLPolicies: len(st.acl.policies), ClusterID: st.clusterID, Size: len(b),
		CRC32C: binary.BigEndian.Uint32(b[len(b)-4:])}
	for _, l := range st.leases {
		if l.Held {
			info.Held++
		}
	}
	return info
}

// RestoreTarget is what a restore into a running cluster keeps of that
// cluster rather than of the backup. Machine.RestoreTarget fills it.
type RestoreTarget struct {
	// LastToken is the highest token the cluster has handed out (or an
	// operator's floor above it): the restored counter is the larger of it
	// and the backup's, so no token is ever handed out twice.
	LastToken uint64
	// ClusterID is the running cluster's id: a backup moves state, not
	// identity, so it may come from another cluster (a new one built after
	// a disaster).
	ClusterID string
	// Index and Term are the Raft entry the restored state stands at.
	Index, Term uint64
	// Leases are key records of the running cluster. A held one stays as
	// it is, whatever the backup says of its key: a restore never gives a
	// key that someone holds to another holder, nor frees it, so mutual
	// exclusion holds across the restore. A free one replaces the
	// backup's record of its key when its last token is higher (or the
	// backup has none): the key comes back free with that token, so a
	// key's tokens never go backwards, and a holder of the backup's lease
	// (a zombie renewing an old token) is refused. A held lease of the
	// backup whose key has no record here comes back free, with its token
	// (the cluster may have forgotten a key granted since: free-key
	// retention); with no records at all (a new cluster) every lease of
	// the backup comes back free.
	Leases []*Lease
	// KeepACL keeps the running ACL state (tokens, policies, worker
	// registrations) rather than the backup's: a restore by a caller
	// without the acl right.
	KeepACL bool
	// acl and backupKey are the running cluster's: the backup key is
	// always kept (a backup never holds one).
	acl       aclState
	backupKey []byte
}

// RestoreTarget returns the running state's part of a restore at index
// and term (see RestoreTarget): its token counter, cluster id, every key
// record, ACL state and backup key.
func (m *Machine) RestoreTarget(index, term uint64) RestoreTarget {
	m.mu.RLock()
	defer m.mu.RUnlock()
	to := RestoreTarget{LastToken: m.lastToken, ClusterID: m.clusterID, Index: index, Term: term,
		Leases: make([]*Lease, 0, len(m.leases)), acl: m.acl.snapshot(), backupKey: m.backupKey}
	m.sorted.ascend("", func(l *Lease) bool {
		to.Leases = append(to.Leases, l)
		return true
	})
	return to
}

// Prepare encodes the backup again for a restore into a running cluster
// (see RestoreTarget), in the current snapshot format, and says what the
// result holds. It may be called once: it changes the decoded state.
func (bk *BackupFile) Prepare(to RestoreTarget) ([]byte, SnapshotInfo, error) {
	st := bk.st
	if to.Index == 0 || to.Term == 0 {
		return nil, SnapshotInfo{}, fmt.Errorf("restore target: index %d and term %d must be positive", to.Index, to.Term)
	}
	st.lastToken = max(st.lastToken, to.LastToken)
	if to.ClusterID != "" {
		st.clusterID = to.ClusterID
	}
	if to.KeepACL {
		st.acl = to.acl.snapshot()
	}
	st.backupKey = to.backupKey
	// The running cluster's term: a backup of another cluster may carry a
	// later one, under which every expiry of this cluster's leaders would
	// be refused as stale.
	st.establishedTerm = to.Term
	byKey := make(map[string]int, len(st.leases))
	for i, l := range st.leases {
		byKey[l.Key] = i
	}
	running := make(map[string]bool, len(to.Leases))
	for _, l := range to.Leases {
		if l.Token > st.lastToken {
			return nil, SnapshotInfo{}, fmt.Errorf("restore target: lease %q has token %d above the counter %d", l.Key, l.Token, st.lastToken)
		}
		running[l.Key] = true
		i, ok := byKey[l.Key]
		switch {
		case !ok:
			st.leases = append(st.leases, l)
		case l.Held || l.Token > st.leases[i].Token:
			st.leases[i] = l
		}
	}
	// A held lease of the backup whose key the running state has no
	// record of comes back free: the cluster may have forgotten the key
	// (free-key retention) after granting it to others with higher
	// tokens, so its holder may hold it no more. Into a new, empty
	// cluster every lease comes back free: a lease may be lost by a
	// restore, never doubled.
	for i, l := range st.leases {
		if l.Held && !running[l.Key] {
			st.leases[i] = freedLease(l, to.Index)
		}
	}
	st.restamp(to.Index)
	out := appendSnapshot(make([]byte, 0, len(bk.body)+len(bk.body)/8+4096), st, to.Index, to.Term)
	return out, infoOf(st, snapshotVersion, to.Index, to.Term, out), nil
}

// restamp makes the restore the last change of everything: the state's
// indexes become index, and no record says it changed later (a backup of
// another cluster may hold indexes far above this cluster's), so that a
// blocking query at the index before the restore sees it, and later
// changes move the indexes on.
func (st *state) restamp(index uint64) {
	st.leaseIndex, st.groupIndex, st.acl.index = index, index, index
	down := func(v *uint64) { *v = min(*v, index) }
	for i, l := range st.leases {
		if l.CreateIndex > index || l.ModifyIndex > index {
			c := *l
			down(&c.CreateIndex)
			down(&c.ModifyIndex)
			st.leases[i] = &c
		}
	}
	for _, g := range st.groups {
		down(&g.CreateIndex)
		down(&g.ModifyIndex)
		down(&g.AssignIndex)
	}
	for _, t := range st.acl.tokens {
		down(&t.CreateIndex)
	}
	for _, p := range st.acl.policies {
		down(&p.CreateIndex)
		down(&p.ModifyIndex)
	}
	for _, w := range st.acl.workers {
		down(&w.Index)
	}
}

// PrepareRecovery rewrites snapshot b (a Raft snapshot of this format,
// not a backup) for a server recovered alone after its cluster lost a
// quorum for good, when the lost servers may have handed out tokens up to
// floor, above the snapshot's counter: the survivor then missed grants,
// and any lease it holds may have been granted since to another holder.
// The counter is raised to floor and every held lease is freed (reason
// revoked), keeping its token, so that no key's token goes backwards and
// no key has two holders. With floor at or below the counter it returns
// b unchanged. It returns how many leases it freed.
func PrepareRecovery(b []byte, floor uint64) ([]byte, int, error) {
	st, index, term, err := decodeSnapshot(b)
	if err != nil {
		return nil, 0, err
	}
	if floor <= st.lastToken {
		return b, 0, nil
	}
	st.lastToken = floor
	freed := 0
	for i, l := range st.leases {
		if l.Held {
			st.leases[i] = freedLease(l, l.ModifyIndex)
			freed++
		}
	}
	return appendSnapshot(make([]byte, 0, len(b)), st, index, term), freed, nil
}

// freedLease is a copy of held lease l freed by a restore or a recovery
// at index: free with reason revoked, its token kept (a key's tokens
// never go backwards) and its secret hash dropped (nobody acts on a free
// lease as its holder).
func freedLease(l *Lease, index uint64) *Lease {
	c := *l
	c.Held, c.Reason, c.Ending = false, ReasonRevoked, ReasonNone
	c.SecretHash = ""
	c.ModifyIndex = index
	return &c
}

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

// HasBackupKey reports whether a BackupKey command has been applied.
func (m *Machine) HasBackupKey() bool { return rlocked(m, func() bool { return m.backupKey != nil }) }
