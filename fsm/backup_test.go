package fsm

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestRestoreNeverLowersTheTokenCounter: a backup restored into the
// cluster it came from, after more grants, keeps the cluster's counter;
// into a new cluster, the backup's. Either way the restored state has the
// running cluster's id and the target's index and term, and a machine
// restored from it hands out a token above both counters.
func TestRestoreNeverLowersTheTokenCounter(t *testing.T) {
	n := newNode(t)
	n.one(ClusterID{ID: "old"})
	n.one(acquire("a", "h1"))
	n.one(acquire("b", "h2"))
	backup := n.m.Backup()
	for _, k := range []string{"c", "d", "e"} {
		n.one(acquire(k, "h3"))
	}
	since := n.m.LastToken() // 5: three more grants after the backup

	info, err := InspectSnapshot(backup)
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	if info.LastToken != 2 || info.Leases != 2 || info.Held != 2 || info.ClusterID != "old" || info.Size != len(backup) {
		t.Fatalf("inspect = %+v, want last token 2, 2 leases held, cluster old, size %d", info, len(backup))
	}

	// None of the targets has a record of a key of the backup (a new,
	// empty cluster, or one that forgot every key since), so the backup's
	// two held leases come back free: a lease may be lost by a restore,
	// never doubled (TestPrepareRestoreKeyRecords).
	for _, tc := range []struct {
		name      string
		target    RestoreTarget
		wantToken uint64
	}{
		{"same cluster, after more grants, its keys forgotten", RestoreTarget{LastToken: since, ClusterID: "old", Index: 100, Term: 7}, since},
		{"a new cluster", RestoreTarget{LastToken: 0, ClusterID: "new", Index: 3, Term: 2}, 2},
		{"an operator's floor", RestoreTarget{LastToken: 1000, ClusterID: "new", Index: 3, Term: 2}, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, orig, err := PrepareRestore(backup, tc.target)
			if err != nil {
				t.Fatalf("PrepareRestore: %v", err)
			}
			if orig.LastToken != 2 {
				t.Errorf("original's info: last token %d, want 2", orig.LastToken)
			}
			got, err := InspectSnapshot(out)
			if err != nil {
				t.Fatalf("inspect the prepared snapshot: %v", err)
			}
			if got.LastToken != tc.wantToken || got.ClusterID != tc.target.ClusterID || got.Index != tc.target.Index || got.Term != tc.target.Term || got.Leases != 2 || got.Held != 0 {
				t.Fatalf("prepared = %+v, want last token %d, cluster %s, index %d, term %d, 2 leases, none held", got, tc.wantToken, tc.target.ClusterID, tc.target.Index, tc.target.Term)
			}
			m := New()
			if err := m.Restore(io.NopCloser(bytes.NewReader(out))); err != nil {
				t.Fatalf("restore: %v", err)
			}
			r := &node{t: t, m: m, index: tc.target.Index, term: tc.target.Term}
			if res := r.one(acquire("f", "h4")); res.Lease == nil || res.Lease.Token != tc.wantToken+1 {
				t.Fatalf("first grant after the restore: %+v, want token %d", res, tc.wantToken+1)
			}
			if l := m.Get("c"); l != nil && l.Held {
				t.Fatalf("key c, acquired after the backup, is held after the restore: %+v", l)
			}
		})
	}
}

// TestPrepareRestoreRefusesDamage: a damaged or truncated snapshot is
// refused with ErrBadSnapshot before anything is restored.
func TestPrepareRestoreRefusesDamage(t *testing.T) {
	n := newNode(t)
	n.one(acquire("a", "h1"))
	backup := n.m.Backup()
	to := RestoreTarget{LastToken: 1, ClusterID: "c", Index: 10, Term: 2}
	flipped := bytes.Clone(backup)
	flipped[len(flipped)/2] ^= 0x01
	for name, b := range map[string][]byte{
		"a flipped bit":  flipped,
		"truncated":      backup[:len(backup)-1],
		"empty":          nil,
		"not a snapshot": []byte("{\"leases\": []}"),
	} {
		if _, _, err := PrepareRestore(b, to); !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("%s: err = %v, want ErrBadSnapshot", name, err)
		}
		if _, err := InspectSnapshot(b); !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("inspect %s: err = %v, want ErrBadSnapshot", name, err)
		}
	}
	if _, _, err := PrepareRestore(backup, RestoreTarget{}); err == nil {
		t.Error("PrepareRestore to index 0: no error")
	}
}

// TestRestoreKeepsWhatIsHeldNow: a lease held when the restore runs stays
// with its holder and token, whatever the snapshot says of its key (free
// there, absent, or held by someone else); keys the snapshot holds and
// nobody holds now are held again.
func TestRestoreKeepsWhatIsHeldNow(t *testing.T) {
	n := newNode(t)
	n.one(acquire("a", "h1")) // token 1, in the backup
	n.one(acquire("b", "h2")) // token 2, in the backup, released since
	backup := n.m.Backup()
	n.one(Release{Key: "a", Holder: "h1", Token: 1})
	n.one(acquire("a", "h9")) // token 3: a changed hands after the backup
	n.one(acquire("c", "h3")) // token 4: c is new
	n.one(Release{Key: "b", Holder: "h2", Token: 2})

	m := restoredBackup(t, backup, n.m.RestoreTarget(50, 3))
	for key, want := range map[string]struct {
		holder string
		token  uint64
	}{"a": {"h9", 3}, "b": {"h2", 2}, "c": {"h3", 4}} {
		l := m.Get(key)
		if l == nil || !l.Held || l.Holder != want.holder || l.Token != want.token {
			t.Errorf("%s after the restore: %+v, want held by %s with token %d", key, l, want.holder, want.token)
		}
	}
}

// TestRestoreOfAnotherClustersBackupTakesThisClustersTermAndIndexes: a
// backup from a cluster far ahead in terms and indexes, restored into a
// young one, takes the young cluster's term (its expiries are not refused
// as stale) and indexes (blocking queries see later changes).
func TestRestoreOfAnotherClustersBackupTakesThisClustersTermAndIndexes(t *testing.T) {
	old := newNode(t)
	old.index, old.term = 10_000_000, 50
	old.one(LeaderEstablished{Term: 50})
	old.one(acquire("a", "h1"))
	old.one(acquire("b", "h2"))
	old.one(Release{Key: "b", Holder: "h2", Token: 2})
	m := restoredBackup(t, old.m.Backup(), RestoreTarget{Index: 10, Term: 3})
	if applied, _, lease := m.Indexes(); applied != 10 || lease != 10 {
		t.Errorf("indexes after the restore: applied %d, lease %d; want 10 and 10", applied, lease)
	}
	for _, key := range []string{"a", "b"} {
		if l := m.Get(key); l == nil || l.ModifyIndex > 10 || l.CreateIndex > 10 {
			t.Errorf("%s after the restore: %+v, want its indexes at most 10", key, l)
		}
	}
	// The young cluster has no record of a, so a comes back free
	// (TestPrepareRestoreKeyRecords); its leader grants it again in term 3.
	young := &node{t: t, m: m, index: 10, term: 3}
	res := young.one(acquire("a", "h3"))
	if res.Lease == nil || res.Lease.Token != 3 {
		t.Fatalf("grant of a after the restore: %+v, want token 3", res)
	}
	if res := young.one(Expire{Key: "a", Token: 3, Term: 3}); res.Code != Freed {
		t.Fatalf("expiry by this cluster's leader (term 3) after the restore: %+v, want the key freed", res)
	}
	if _, _, lease := m.Indexes(); lease != 12 {
		t.Errorf("lease index after the expiry: %d, want 12", lease)
	}
}

// TestRestoreNeverTakesAKeysTokenBack: a key held in the backup (alice,
// token 1) that another holder acquired and released since (bob, token 2)
// comes back free with bob's token; a key the backup does not know keeps
// its record.
func TestRestoreNeverTakesAKeysTokenBack(t *testing.T) {
	n := newNode(t)
	n.one(acquire("app/rk", "alice")) // token 1
	backup := n.m.Backup()
	n.one(Release{Key: "app/rk", Holder: "alice", Token: 1})
	n.one(acquire("app/rk", "bob")) // token 2
	n.one(Release{Key: "app/rk", Holder: "bob", Token: 2})
	n.one(acquire("new", "carol")) // token 3
	n.one(Release{Key: "new", Holder: "carol", Token: 3})
	m := restoredBackup(t, backup, n.m.RestoreTarget(50, 3))
	if l := m.Get("app/rk"); l == nil || l.Held || l.Token != 2 {
		t.Errorf("app/rk after the restore: %+v, want free with bob's token 2", l)
	}
	if l := m.Get("new"); l == nil || l.Held || l.Token != 3 {
		t.Errorf("new (not in the backup) after the restore: %+v, want free with token 3", l)
	}
}

// TestPrepareRestoreKeyRecords: what a restore makes of each key, by
// what the backup and the running state hold of it. A lease held now
// stays; a key free now under a higher token stays free with it; a key
// the running state has no record of (forgotten by free-key retention,
// or a new cluster) comes back free with the backup's token and no
// secret, so that its holder, who may have lost it since to a holder
// with a higher token, cannot act on it, and the next grant is above
// every token handed out.
func TestPrepareRestoreKeyRecords(t *testing.T) {
	alice := HashSecret("alice's secret")
	n := newNode(t)
	n.one(acquire("kept", "h1"))                                                               // 1
	n.one(acquire("changed", "h1"))                                                            // 2
	n.one(acquire("taken", "h1"))                                                              // 3
	n.one(acquire("released", "h1"))                                                           // 4
	n.one(Acquire{Key: "forgotten", Holder: "alice", TTL: ttl, Time: wall, SecretHash: alice}) // 5
	n.one(acquire("forgotten-free", "h1"))                                                     // 6
	n.one(Release{Key: "forgotten-free", Holder: "h1", Token: 6})                              //
	backup := n.m.Backup()
	n.one(Release{Key: "changed", Holder: "h1", Token: 2})
	n.one(acquire("changed", "h9")) // 7
	n.one(Release{Key: "taken", Holder: "h1", Token: 3})
	n.one(acquire("taken", "h9")) // 8
	n.one(Release{Key: "taken", Holder: "h9", Token: 8})
	n.one(Release{Key: "released", Holder: "h1", Token: 4})
	n.one(Release{Key: "forgotten", Holder: "alice", Token: 5, SecretHash: alice})
	n.one(acquire("forgotten", "bob")) // 9
	n.one(Release{Key: "forgotten", Holder: "bob", Token: 9})
	n.one(Forget{Key: "forgotten", Token: 9})
	n.one(Forget{Key: "forgotten-free", Token: 6})
	n.one(acquire("new", "h3")) // 10
	if l := n.m.Get("forgotten"); l != nil {
		t.Fatalf("forgotten before the restore: %+v, want no record", l)
	}

	const at = 50
	bk, err := ReadBackup(backup)
	if err != nil {
		t.Fatal(err)
	}
	out, info, err := bk.Prepare(n.m.RestoreTarget(at, 3))
	if err != nil {
		t.Fatal(err)
	}
	m := restoredFrom(t, out)
	for _, tc := range []struct {
		key    string
		held   bool
		holder string
		token  uint64
	}{
		{"kept", true, "h1", 1},            // held in the backup and now
		{"changed", true, "h9", 7},         // held now by another: stays
		{"taken", false, "h9", 8},          // free now under a higher token
		{"released", true, "h1", 4},        // free now under the backup's token
		{"forgotten", false, "alice", 5},   // no record now: freed
		{"forgotten-free", false, "h1", 6}, // free in the backup, no record now
		{"new", true, "h3", 10},            // not in the backup
	} {
		t.Run(tc.key, func(t *testing.T) {
			l := m.Get(tc.key)
			if l == nil || l.Held != tc.held || l.Holder != tc.holder || l.Token != tc.token {
				t.Fatalf("after the restore: %+v, want held %v by %s with token %d", l, tc.held, tc.holder, tc.token)
			}
			if !l.Held && (l.SecretHash != "" || l.Ending != ReasonNone || l.Reason == ReasonNone) {
				t.Errorf("free after the restore with secret hash %q, ending %v, reason %v: want no secret, not ending, a reason", l.SecretHash, l.Ending, l.Reason)
			}
		})
	}
	if l := m.Get("forgotten"); l.Reason != ReasonRevoked || l.ModifyIndex != at {
		t.Errorf("forgotten after the restore: reason %v, modify index %d; want revoked at the restore's index %d", l.Reason, l.ModifyIndex, at)
	}
	if info.Held != 4 || info.LastToken != 10 {
		t.Errorf("prepared %+v, want 4 held and the counter at 10", info)
	}
	r := &node{t: t, m: m, index: at, term: 3}
	if res := r.one(Release{Key: "forgotten", Holder: "alice", Token: 5, SecretHash: alice}); res.Code == Freed {
		t.Errorf("alice released forgotten with token 5 after the restore: %+v", res)
	}
	if res := r.one(Acquire{Key: "forgotten", Holder: "alice", TTL: ttl, Time: wall, SecretHash: alice}); res.Lease == nil || res.Lease.Token != 11 {
		t.Errorf("alice acquires forgotten again: %+v, want a new grant with token 11, above bob's 9", res)
	}
}

// TestBackupsAreSignedByTheirCluster: a backup verifies on the cluster
// that wrote it, holds no backup key, and survives a restore with the
// key kept; an edited backup, another cluster's, and a bare snapshot of a
// build before signed backups do not verify.
func TestBackupsAreSignedByTheirCluster(t *testing.T) {
	key := bytes.Repeat([]byte{7}, BackupKeyLen)
	n := newNode(t)
	n.one(BackupKey{Key: key})
	n.one(acquire("a", "h1"))
	backup := n.m.Backup()
	if bytes.Contains(backup, key) {
		t.Fatal("the backup holds the backup key")
	}
	bk, err := ReadBackup(backup)
	if err != nil {
		t.Fatal(err)
	}
	if !bk.Info.Signed {
		t.Errorf("info %+v: want signed", bk.Info)
	}
	if err := n.m.VerifyBackup(bk); err != nil {
		t.Errorf("own backup: %v, want it verified", err)
	}
	other := newNode(t)
	other.one(BackupKey{Key: bytes.Repeat([]byte{8}, BackupKeyLen)})
	if err := other.m.VerifyBackup(bk); !errors.Is(err, ErrUnverifiedBackup) {
		t.Errorf("another cluster's backup: %v, want ErrUnverifiedBackup", err)
	}
	edited := bytes.Clone(backup)
	i := bytes.Index(edited, []byte("h1"))
	edited[i+1] = '2'
	edited = append(edited[:backupHeader+backupMACLen:backupHeader+backupMACLen], withCRC(edited[backupHeader+backupMACLen:])...)
	if bk, err := ReadBackup(edited); err != nil {
		t.Fatalf("edited backup with its CRC made good: %v", err)
	} else if err := n.m.VerifyBackup(bk); !errors.Is(err, ErrUnverifiedBackup) {
		t.Errorf("edited backup: %v, want ErrUnverifiedBackup", err)
	}
	bare := newNode(t)
	bare.one(acquire("a", "h1"))
	if bk, err := ReadBackup(bare.m.Backup()); err != nil || bk.Info.Signed {
		t.Fatalf("bare snapshot: %+v, %v; want an unsigned backup", bk, err)
	} else if err := n.m.VerifyBackup(bk); !errors.Is(err, ErrUnverifiedBackup) {
		t.Errorf("bare snapshot: %v, want ErrUnverifiedBackup", err)
	}
	m := restoredBackup(t, backup, n.m.RestoreTarget(50, 3))
	if bk, _ := ReadBackup(m.Backup()); m.VerifyBackup(bk) != nil || n.m.VerifyBackup(bk) != nil {
		t.Error("a backup after the restore does not verify with the cluster's key: the restore lost it")
	}
}

// TestRestoreKeepsTheRunningACLState: with KeepACL the running tokens and
// policies stay, whatever the backup holds; without it the backup's come
// back.
func TestRestoreKeepsTheRunningACLState(t *testing.T) {
	n := newNode(t)
	n.one(ACLBootstrap{Token: ACLToken{AccessorID: "boot", SecretHash: "b0", Management: true}})
	backup := n.m.Backup()
	n.one(ACLTokenSet{Token: ACLToken{AccessorID: "later", SecretHash: "1a", Policies: []string{"ops"}}})
	for _, keep := range []bool{true, false} {
		to := n.m.RestoreTarget(50, 3)
		to.KeepACL = keep
		m := restoredBackup(t, backup, to)
		if got := m.ACLToken("later") != nil; got != keep {
			t.Errorf("KeepACL %v: token made after the backup present: %v, want %v", keep, got, keep)
		}
		if m.ACLToken("boot") == nil {
			t.Errorf("KeepACL %v: the bootstrap token is gone", keep)
		}
	}
}

// TestPrepareRecoveryFreesWhatMayHaveChangedHands: a floor above the
// counter raises it and frees every held lease, keeping its token; a
// floor at or below it changes nothing.
func TestPrepareRecoveryFreesWhatMayHaveChangedHands(t *testing.T) {
	n := newNode(t)
	n.one(acquire("a", "h1"))
	n.one(End{Key: "a"})
	n.one(acquire("b", "h2"))
	snap := n.m.snapshotBytes()
	if out, freed, err := PrepareRecovery(snap, 2); err != nil || freed != 0 || !bytes.Equal(out, snap) {
		t.Fatalf("floor 2 (the counter): freed %d, %v; want the snapshot unchanged", freed, err)
	}
	out, freed, err := PrepareRecovery(snap, 9)
	if err != nil || freed != 2 {
		t.Fatalf("floor 9: freed %d, %v; want 2", freed, err)
	}
	m := restoredFrom(t, out)
	if m.LastToken() != 9 {
		t.Errorf("counter %d, want 9", m.LastToken())
	}
	for key, token := range map[string]uint64{"a": 1, "b": 2} {
		if l := m.Get(key); l == nil || l.Held || l.Token != token || l.Ending != ReasonNone {
			t.Errorf("%s after the recovery: %+v, want free with token %d", key, l, token)
		}
	}
}
