package metrics

import (
	"os"
	"testing"
)

func TestSnapshotTakenAt(t *testing.T) {
	for _, tt := range []struct {
		name, id string
		want     float64
		ok       bool
	}{
		{"file store id", "3-9-1795568681029", 1795568681.029, true},
		{"no time", "3-9", 0, false},
		{"not a number", "3-9-soon", 0, false},
		{"more parts", "3-9-1795568681029-x", 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := snapshotTakenAt(tt.id)
			if ok != tt.ok || got != tt.want {
				t.Errorf("snapshotTakenAt(%q) = %v, %v; want %v, %v", tt.id, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestFileSystemSpace(t *testing.T) {
	free, size, ok := fileSystemSpace(t.TempDir())
	if !ok {
		t.Skip("no statfs on this platform")
	}
	if size == 0 || free > size {
		t.Errorf("free %d, size %d: want 0 < free <= size", free, size)
	}
	if _, _, ok := fileSystemSpace(os.DevNull + "/no/such/dir"); ok {
		t.Errorf("a missing dir has space")
	}
}
