package cluster_test

import (
	"testing"

	"github.com/tenure-io/tenure/fsm"
)

func BenchmarkInspectLargeBackup(b *testing.B) {
	backup := largeBackupState(b).Backup()
	b.SetBytes(int64(len(backup)))
	b.ResetTimer()
	for range b.N {
		if _, err := fsm.InspectSnapshot(backup); err != nil {
			b.Fatal(err)
		}
	}
}
