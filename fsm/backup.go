package fsm

import (
	"encoding/binary"
	"fmt"
)

// SnapshotInfo is what a snapshot holds, as `tenure snapshot inspect`
// shows it.
type SnapshotInfo struct {
	// Version is the snapshot format's version.
	Version uint16 `json:"version"`
	// Index and Term are the last Raft entry the state includes.
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
	// LastToken is the last fencing token handed out.
	LastToken uint64 `json:"last_token"`
	// Leases counts the key records, Held those held.
	Leases int `json:"leases"`
	Held   int `json:"held"`
	// Groups, ACLTokens, ACLPolicies count the rest of the state.
	Groups      int `json:"groups"`
	ACLTokens   int `json:"acl_tokens"`
	ACLPolicies int `json:"acl_policies"`
	// ClusterID is the id of the cluster the state was taken from.
	ClusterID string `json:"cluster_id"`
	// Size is the snapshot's length in bytes, CRC its CRC-32C.
	Size int    `json:"size"`
	CRC  uint32 `json:"crc32c"`
}

// Backup encodes the current state as a snapshot (the format of Persist):
// what `tenure snapshot save` writes.
func (m *Machine) Backup() []byte {
	s, _ := m.Snapshot()
	snap := s.(*snapshot)
	return encodeSnapshot(snap.state, snap.index, snap.term)
}

// InspectSnapshot checks a snapshot (magic, version, checksum, every
// record) and says what it holds. Its errors wrap ErrBadSnapshot.
func InspectSnapshot(b []byte) (SnapshotInfo, error) {
	st, index, term, err := decodeSnapshot(b)
	if err != nil {
		return SnapshotInfo{}, err
	}
	return infoOf(st, binary.BigEndian.Uint16(b[4:6]), index, term, b), nil
}

func infoOf(st state, version uint16, index, term uint64, b []byte) SnapshotInfo {
	info := SnapshotInfo{Version: version, Index: index, Term: term, LastToken: st.lastToken,
		Leases: len(st.leases), Groups: len(st.groups), ACLTokens: len(st.acl.tokens),
		ACLPolicies: len(st.acl.policies), ClusterID: st.clusterID, Size: len(b),
		CRC: binary.BigEndian.Uint32(b[len(b)-4:])}
	for _, l := range st.leases {
		if l.Held {
			info.Held++
		}
	}
	return info
}

// RestoreTarget is what a restore into a running cluster keeps of that
// cluster rather than of the snapshot.
type RestoreTarget struct {
	// LastToken is the highest token the cluster has handed out (or an
	// operator's floor above it): the restored counter is the larger of it
	// and the snapshot's, so no token is ever handed out twice.
	LastToken uint64
	// ClusterID is the running cluster's id: a snapshot moves state, not
	// identity, so it may come from another cluster (a new one built after
	// a disaster).
	ClusterID string
	// Index and Term are the Raft entry the restored state stands at.
	Index, Term uint64
	// Held are the leases held in the running cluster. Each stays as it
	// is, whatever the snapshot says of its key: a restore never gives a
	// key that someone holds to another holder, nor frees it, so mutual
	// exclusion holds across the restore.
	Held []*Lease
}

// PrepareRestore checks snapshot b and encodes it again for a restore
// into a running cluster (see RestoreTarget), in the current format. It
// returns the new snapshot and what the original held.
func PrepareRestore(b []byte, to RestoreTarget) ([]byte, SnapshotInfo, error) {
	st, index, term, err := decodeSnapshot(b)
	if err != nil {
		return nil, SnapshotInfo{}, err
	}
	info := infoOf(st, binary.BigEndian.Uint16(b[4:6]), index, term, b)
	if to.Index == 0 || to.Term == 0 {
		return nil, info, fmt.Errorf("restore target: index %d and term %d must be positive", to.Index, to.Term)
	}
	st.lastToken = max(st.lastToken, to.LastToken)
	if to.ClusterID != "" {
		st.clusterID = to.ClusterID
	}
	// The running cluster's term: a backup of another cluster may carry a
	// later one, under which every expiry of this cluster's leaders would
	// be refused as stale.
	st.establishedTerm = to.Term
	st.restamp(to.Index)
	if len(to.Held) > 0 {
		byKey := make(map[string]int, len(st.leases))
		for i, l := range st.leases {
			byKey[l.Key] = i
		}
		for _, l := range to.Held {
			if !l.Held {
				continue
			}
			if l.Token > st.lastToken {
				return nil, info, fmt.Errorf("restore target: held lease %q has token %d above the counter %d", l.Key, l.Token, st.lastToken)
			}
			if i, ok := byKey[l.Key]; ok {
				st.leases[i] = l
			} else {
				st.leases = append(st.leases, l)
			}
		}
	}
	return encodeSnapshot(st, to.Index, to.Term), info, nil
}

// restamp makes the restore the last change of everything: the state's
// indexes become index, and no record says it changed later (a backup of
// another cluster may hold indexes far above this cluster's), so that a
// blocking query at the index before the restore sees it, and later
// changes move the indexes on.
func (st *state) restamp(index uint64) {
	st.leaseIndex, st.groupIndex, st.acl.index = index, index, index
	down := func(v *uint64) {
		if *v > index {
			*v = index
		}
	}
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
