package cluster_test

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// TestScheduledBackupsKeepTheNewest: with a backup directory, the leader
// writes a backup every interval and keeps the newest few; each reads
// back with the state; followers write none.
func TestScheduledBackupsKeepTheNewest(t *testing.T) {
	dirs := map[string]string{}
	base := t.TempDir()
	c := inproc.Start(t, 3, inproc.Options{Tweak: func(cfg *cluster.Config) {
		cfg.BackupDir = base + "/" + cfg.NodeID
		cfg.BackupInterval = time.Second
		cfg.BackupKeep = 2
		dirs[cfg.NodeID] = cfg.BackupDir
	}})
	li := c.Leader()
	ctx := harness.Context(t, 10*time.Second)
	if _, _, err := c.Node(li).Acquire(ctx, cluster.AcquireRequest{Secret: testSecret, Key: "a", Holder: "h", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	dir := dirs[c.Peer(li).ID]
	var first []string
	harness.WaitUntil(t, 10*time.Second, "two backups in the leader's directory", func() bool {
		first = names(t, dir)
		return len(first) == 2
	})
	harness.WaitUntil(t, 10*time.Second, "a newer backup replacing the oldest", func() bool {
		now := names(t, dir)
		return len(now) == 2 && !slices.Equal(now, first)
	})
	if got := names(t, dir); len(got) != 2 {
		t.Fatalf("leader's directory holds %v, want the 2 newest backups", got)
	}
	files, err := cluster.ListBackups(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Err != nil || f.Info.Held != 1 || f.Info.LastToken != 1 {
			t.Errorf("backup %s: %+v, %v; want it to hold the lease", f.Path, f.Info, f.Err)
		}
	}
	for i := range c.Len() {
		if i != li {
			if got := names(t, dirs[c.Peer(i).ID]); len(got) != 0 {
				t.Errorf("follower %s wrote backups %v", c.Peer(i).ID, got)
			}
		}
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
