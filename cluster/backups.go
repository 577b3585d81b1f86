package cluster

import "github.com/tenure-io/tenure/cluster/internal/backup"

// BackupFile is one backup of a backup directory.
type BackupFile = backup.File

// ListBackups reads every backup of dir (the files Config.BackupDir
// gets), oldest first, checking each.
func ListBackups(dir string) ([]BackupFile, error) { return backup.List(dir) }

// runBackups writes a backup to BackupDir every BackupInterval while this
// node leads, and keeps the BackupKeep newest (backup.Schedule). It ends
// at Shutdown.
func (n *Node) runBackups() {
	defer n.wg.Done()
	s := &backup.Schedule{
		Dir: n.cfg.BackupDir, Interval: n.cfg.BackupInterval, Keep: n.cfg.BackupKeep,
		Leading:   func() bool { return n.leading.Load() != nil },
		Backup:    n.Backup,
		WriteFile: WriteFileDurably,
		Written: func() {
			n.metrics.Backups.WithLabelValues("written").Inc()
			n.metrics.LastBackup.SetToCurrentTime()
		},
		Failed: func() { n.metrics.Backups.WithLabelValues("failed").Inc() },
		Log:    n.log,
	}
	s.Run(n.shutdownCh)
}
