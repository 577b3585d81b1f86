package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tenure-io/tenure/fsm"
)

// Backup files are named backup-<UTC time>-<index>.snap: in time order by
// name.
const (
	backupPrefix = "backup-"
	backupSuffix = ".snap"
	backupTime   = "20060102T150405Z"
)

// BackupFile is one backup of a backup directory.
type BackupFile struct {
	Path string
	// Info is what the file holds; Err, when the file does not read back
	// as a backup, says why (Info is then zero).
	Info fsm.SnapshotInfo
	Err  error
}

// ListBackups reads every backup of dir (the files Config.BackupDir
// gets), oldest first, checking each.
func ListBackups(dir string) ([]BackupFile, error) {
	names, err := backupNames(dir)
	if err != nil {
		return nil, err
	}
	out := make([]BackupFile, 0, len(names))
	for _, name := range names {
		f := BackupFile{Path: filepath.Join(dir, name)}
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

// runBackups writes a backup to BackupDir every BackupInterval while this
// node leads, and keeps the BackupKeep newest. It ends at Shutdown.
func (n *Node) runBackups() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.BackupInterval)
	defer t.Stop()
	for {
		select {
		case <-n.shutdownCh:
			return
		case <-t.C:
		}
		if n.leading.Load() == nil {
			continue // followers and a leader not serving write none
		}
		path, info, err := n.writeBackup()
		if err != nil {
			n.metrics.backups.WithLabelValues("failed").Inc()
			n.log.Warn("backup_failed", "dir", n.cfg.BackupDir, "error", err)
			continue
		}
		n.metrics.backups.WithLabelValues("written").Inc()
		n.metrics.lastBackup.SetToCurrentTime()
		n.log.Info("backup_written", "file", path, "bytes", info.Size, "index", info.Index, "leases", info.Leases)
		if err := n.pruneBackups(); err != nil {
			n.log.Warn("backup_prune_failed", "dir", n.cfg.BackupDir, "error", err)
		}
	}
}

func (n *Node) writeBackup() (string, fsm.SnapshotInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), min(n.cfg.BackupInterval, time.Minute))
	defer cancel()
	b, err := n.Backup(ctx)
	if err != nil {
		return "", fsm.SnapshotInfo{}, err
	}
	info, err := fsm.InspectSnapshot(b)
	if err != nil {
		return "", fsm.SnapshotInfo{}, fmt.Errorf("the backup does not read back: %w", err)
	}
	name := fmt.Sprintf("%s%s-%020d%s", backupPrefix, time.Now().UTC().Format(backupTime), info.Index, backupSuffix)
	path := filepath.Join(n.cfg.BackupDir, name)
	if err := os.MkdirAll(n.cfg.BackupDir, 0o700); err != nil {
		return "", fsm.SnapshotInfo{}, err
	}
	return path, info, WriteFileDurably(path, b, 0o600)
}

// pruneBackups removes all but the BackupKeep newest backups, and the
// temporary files of writes that a crash cut short (this node is the
// directory's only writer, and none is under way now).
func (n *Node) pruneBackups() error {
	if stale, err := filepath.Glob(filepath.Join(n.cfg.BackupDir, "."+backupPrefix+"*"+backupSuffix+".tmp-*")); err == nil {
		for _, f := range stale {
			os.Remove(f)
		}
	}
	names, err := backupNames(n.cfg.BackupDir)
	if err != nil {
		return err
	}
	for len(names) > n.cfg.BackupKeep {
		if err := os.Remove(filepath.Join(n.cfg.BackupDir, names[0])); err != nil {
			return err
		}
		names = names[1:]
	}
	return nil
}
