package backup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness"
)

// List returns the backups of a directory oldest first, each checked,
// and skips files that are not named as backups.
func TestListChecksEachBackup(t *testing.T) {
	dir := t.TempDir()
	good := fsm.New().Backup()
	for name, b := range map[string][]byte{
		"backup-20261101T000000Z-00000000000000000001.snap": good,
		"backup-20261102T000000Z-00000000000000000002.snap": []byte("not a backup"),
		"notes.txt": []byte("skipped"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	files, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("got %d files, want the 2 backups", len(files))
	}
	if files[0].Err != nil || !strings.Contains(files[0].Path, "20261101") {
		t.Errorf("first file: %s, %v; want the older backup, readable", files[0].Path, files[0].Err)
	}
	if files[1].Err == nil {
		t.Errorf("damaged backup %s: no error, want why it does not read back", files[1].Path)
	}
	if _, err := List(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("List of a missing dir = %v, want os.ErrNotExist", err)
	}
}

// A schedule writes only while leading, keeps the Keep newest backups and
// removes the temporary files of cut-short writes.
func TestScheduleWritesWhileLeadingAndKeepsTheNewest(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, ".backup-x.snap.tmp-1")
	if err := os.WriteFile(stale, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var leading atomic.Bool
	var written, failed atomic.Int64
	var index atomic.Uint64
	s := &Schedule{
		Dir: dir, Interval: 10 * time.Millisecond, Keep: 2,
		Leading: leading.Load,
		Backup: func(context.Context) ([]byte, error) {
			// Distinct names: the index is part of a backup's name.
			m := fsm.New()
			i := index.Add(1)
			m.Apply(&raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: fsm.Encode(fsm.ClusterID{ID: "c"})})
			return m.Backup(), nil
		},
		WriteFile: func(path string, b []byte, perm os.FileMode) error { return os.WriteFile(path, b, perm) },
		Written:   func() { written.Add(1) },
		Failed:    func() { failed.Add(1) },
		Log:       hclog.NewNullLogger(),
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(stop)
	}()
	time.Sleep(50 * time.Millisecond) // five ticks
	if files, _ := List(dir); len(files) != 0 || written.Load() != 0 {
		t.Fatalf("not leading: %d files, %d written; want none", len(files), written.Load())
	}
	leading.Store(true)
	harness.WaitUntil(t, 5*time.Second, "three backups written", func() bool { return written.Load() >= 3 })
	close(stop)
	<-done // Run returns between two backups, each pruned
	files, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Errorf("got %d backups, want the 2 newest", len(files))
	}
	for _, f := range files {
		if f.Err != nil {
			t.Errorf("%s: %v", f.Path, f.Err)
		}
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary file: %v, want removed", err)
	}
	if failed.Load() != 0 {
		t.Errorf("%d failed, want none", failed.Load())
	}
}
