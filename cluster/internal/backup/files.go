package backup

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/fsm"
)

// Backup files are named backup-<UTC time>-<index>.snap: in time order by
// name.
const (
	backupPrefix = "backup-"
	backupSuffix = ".snap"
	backupTime   = "20060102T150405Z"
)

// File is one backup of a backup directory.
type File struct {
	Path string
	// Info is what the file holds; Err, when the file does not read back
	// as a backup, says why (Info is then zero).
	Info fsm.SnapshotInfo
	Err  error
}

// List reads every backup of dir (the files Schedule writes), oldest
// first, checking each.
func List(dir string) ([]File, error) {
	names, err := backupNames(dir)
	if err != nil {
		return nil, err
	}
	out := make([]File, 0, len(names))
	for _, name := range names {
		f := File{Path: filepath.Join(dir, name)}
		b, err := os.ReadFile(f.Path)
		if err == nil {
			f.Info, err = fsm.InspectSnapshot(b)
		}
		f.Err = err
		out = append(out, f)
	}
	return out, nil
}

func backupNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); e.Type().IsRegular() && strings.HasPrefix(n, backupPrefix) && strings.HasSuffix(n, backupSuffix) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// Schedule is a leader's scheduled backups: one written to Dir every
// Interval while Leading, the Keep newest kept. The node's configuration
// has checked the bounds of Interval and Keep.
type Schedule struct {
	Dir      string
	Interval time.Duration
	Keep     int
	// Leading reports whether this node leads and serves: only then is
	// a backup written.
	Leading func() bool
	// Backup returns a backup of the whole state (cluster.Node.Backup).
	Backup func(context.Context) ([]byte, error)
	// WriteFile writes a file durably (cluster.WriteFileDurably).
	WriteFile func(path string, b []byte, perm os.FileMode) error
	// Written and Failed are called after each backup written or failed
	// (the metrics).
	Written, Failed func()
	Log             hclog.Logger
}

// Run writes a backup every s.Interval while s.Leading, and keeps the
// s.Keep newest. It returns when stop is closed (the node shuts down).
func (s *Schedule) Run(stop <-chan struct{}) {
	t := time.NewTicker(s.Interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if !s.Leading() {
			continue // followers and a leader not serving write none
		}
		path, info, err := s.write()
		if err != nil {
			s.Failed()
			s.Log.Warn("backup_failed", "dir", s.Dir, "error", err)
			continue
		}
		s.Written()
		s.Log.Info("backup_written", "file", path, "bytes", info.Size, "index", info.Index, "leases", info.Leases)
		if err := s.prune(); err != nil {
			s.Log.Warn("backup_prune_failed", "dir", s.Dir, "error", err)
		}
	}
}

func (s *Schedule) write() (string, fsm.SnapshotInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), min(s.Interval, time.Minute))
	defer cancel()
	b, err := s.Backup(ctx)
	if err != nil {
		return "", fsm.SnapshotInfo{}, err
	}
	info, err := fsm.InspectSnapshot(b)
	if err != nil {
		return "", fsm.SnapshotInfo{}, fmt.Errorf("the backup does not read back: %w", err)
	}
	name := fmt.Sprintf("%s%s-%020d%s", backupPrefix, time.Now().UTC().Format(backupTime), info.Index, backupSuffix)
	path := filepath.Join(s.Dir, name)
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return "", fsm.SnapshotInfo{}, err
	}
	return path, info, s.WriteFile(path, b, 0o600)
}

// prune removes all but the s.Keep newest backups, and the temporary
// files of writes that a crash cut short (this node is the directory's
// only writer, and none is under way now).
func (s *Schedule) prune() error {
	if stale, err := filepath.Glob(filepath.Join(s.Dir, "."+backupPrefix+"*"+backupSuffix+".tmp-*")); err == nil {
		for _, f := range stale {
			os.Remove(f)
		}
	}
	names, err := backupNames(s.Dir)
	if err != nil {
		return err
	}
	for len(names) > s.Keep {
		if err := os.Remove(filepath.Join(s.Dir, names[0])); err != nil {
			return err
		}
		names = names[1:]
	}
	return nil
}
