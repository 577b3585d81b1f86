package fsm

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// allocatedBy returns the bytes f allocates on the heap.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestLargeSnapshotsEncodeAndDecodeWithoutGrowingBuffers: a backup, a
// Raft snapshot and a restore of a state of several megabytes (leases
// with the largest metadata) each take about the snapshot's size in
// memory, not the copies of a growing buffer. A leader that wrote a 39 MB
// backup through a growing buffer allocated 221 MB for it; on two cores
// in a VM the first touch of that much fresh memory froze the process for
// 120 to 290 ms, past the 100 ms Raft timings, and cost an election
// (TestLargeBackupRestoresWithoutAnElection).
func TestLargeSnapshotsEncodeAndDecodeWithoutGrowingBuffers(t *testing.T) {
	n := newNode(t)
	n.one(BackupKey{Key: bytes.Repeat([]byte{7}, BackupKeyLen)})
	meta := make(map[string]string, 16)
	for i := range 16 { // the largest metadata a lease may carry
		meta[fmt.Sprintf("k%02d", i)+strings.Repeat("k", 61)] = strings.Repeat("v", 1024)
	}
	for from := 0; from < 600; from += 100 {
		cmds := make([]Command, 0, 100)
		for i := from; i < from+100; i++ {
			a := acquire(fmt.Sprintf("big/%05d", i), "worker")
			a.Metadata = meta
			cmds = append(cmds, a)
		}
		n.batch(cmds...)
	}
	var backup, snap []byte
	backupBytes := allocatedBy(func() { backup = n.m.Backup() })
	s, err := n.m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	snapBytes := allocatedBy(func() { snap = encodeSnapshot(s.(*snapshot).state, 1, 1) })
	restoreBytes := allocatedBy(func() {
		if err := n.m.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
			t.Fatal(err)
		}
	})
	size := uint64(len(snap))
	t.Logf("snapshot %d bytes; allocated: backup %d, snapshot %d, restore %d", size, backupBytes, snapBytes, restoreBytes)
	if size < 8<<20 {
		t.Fatalf("snapshot of %d bytes: the test wants one of several megabytes", size)
	}
	if limit := size + size/4; backupBytes > limit || snapBytes > limit {
		t.Errorf("encoding a %d-byte snapshot allocated %d bytes (backup) and %d (snapshot), want at most %d each", size, backupBytes, snapBytes, limit)
	}
	// The restore reads the snapshot whole (its size) and decodes it (about
	// its size again, for the leases' strings and maps).
	if limit := 5 * size / 2; restoreBytes > limit {
		t.Errorf("restoring a %d-byte snapshot allocated %d bytes, want at most %d", size, restoreBytes, limit)
	}
	if len(backup) < len(snap) {
		t.Errorf("backup of %d bytes, smaller than the snapshot's %d", len(backup), len(snap))
	}
}
