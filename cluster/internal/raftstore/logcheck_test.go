package raftstore

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/tenure-io/tenure/fsm"
)

// TestCheckLogStore: the start-up check refuses a damaged command entry,
// and only that: gaps (which Raft leaves after a follower installs a
// snapshot), Raft's own entries and entries written before checksums pass.
func TestCheckLogStore(t *testing.T) {
	acquire := fsm.Encode(fsm.Acquire{Key: "scene-01", Holder: "tracker-0"})
	old := append([]byte{}, acquire[:len(acquire)-4]...)
	old[1] = 1 // as written before checksums
	damaged := append([]byte{}, acquire...)
	damaged[5] ^= 0x01
	conf := raft.EncodeConfiguration(raft.Configuration{Servers: []raft.Server{{ID: "n1", Address: "n1"}}})
	tests := []struct {
		name    string
		logs    []*raft.Log
		damaged uint64 // the index the check must name; 0: passes
	}{
		{name: "empty"},
		{name: "intact", logs: []*raft.Log{
			{Index: 1, Type: raft.LogConfiguration, Data: conf},
			{Index: 2, Type: raft.LogCommand, Data: acquire},
			{Index: 3, Type: raft.LogCommand, Data: old},
			{Index: 4, Type: raft.LogNoop},
		}},
		{name: "a gap", logs: []*raft.Log{
			{Index: 100, Type: raft.LogCommand, Data: acquire},
			{Index: 101, Type: raft.LogCommand, Data: acquire},
			{Index: 4419, Type: raft.LogCommand, Data: acquire},
		}},
		{name: "a damaged command", damaged: 3, logs: []*raft.Log{
			{Index: 2, Type: raft.LogCommand, Data: acquire},
			{Index: 3, Type: raft.LogCommand, Data: damaged},
			{Index: 4, Type: raft.LogCommand, Data: acquire},
		}},
		{name: "a damaged command after a gap", damaged: 90, logs: []*raft.Log{
			{Index: 2, Type: raft.LogCommand, Data: acquire},
			{Index: 90, Type: raft.LogCommand, Data: damaged},
		}},
		{name: "an old command that does not decode", damaged: 7, logs: []*raft.Log{
			{Index: 7, Type: raft.LogCommand, Data: append(append([]byte{}, old...), 0)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db"), NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			if len(tt.logs) > 0 {
				if err := store.StoreLogs(tt.logs); err != nil {
					t.Fatal(err)
				}
			}
			err = CheckLogStore(store, dir, "n1")
			var le *LogEntryError
			switch {
			case tt.damaged == 0 && err != nil:
				t.Fatalf("CheckLogStore = %v, want nil", err)
			case tt.damaged != 0 && (!errors.As(err, &le) || le.Index != tt.damaged || !errors.Is(err, fsm.ErrCorrupt)):
				t.Fatalf("CheckLogStore = %v, want a *LogEntryError of entry %d wrapping fsm.ErrCorrupt", err, tt.damaged)
			}
		})
	}
}

// misfiled is a log store whose entry under one index says it is another:
// what a damaged key of raft.db looks like.
type misfiled struct {
	raft.LogStore
	at uint64
}

func (m misfiled) GetLog(i uint64, l *raft.Log) error {
	if err := m.LogStore.GetLog(i, l); err != nil {
		return err
	}
	if i == m.at {
		l.Index--
	}
	return nil
}

// An entry stored under an index it does not carry is damage, named by
// the index it is stored under.
func TestCheckLogStoreMisfiledEntry(t *testing.T) {
	store := raft.NewInmemStore()
	acquire := fsm.Encode(fsm.Acquire{Key: "scene-01", Holder: "tracker-0"})
	for i := uint64(1); i <= 3; i++ {
		if err := store.StoreLog(&raft.Log{Index: i, Type: raft.LogCommand, Data: acquire}); err != nil {
			t.Fatal(err)
		}
	}
	err := CheckLogStore(misfiled{store, 2}, t.TempDir(), "n1")
	var le *LogEntryError
	if !errors.As(err, &le) || le.Index != 2 || !errors.Is(err, fsm.ErrCorrupt) {
		t.Fatalf("CheckLogStore = %v, want a *LogEntryError of entry 2 wrapping fsm.ErrCorrupt", err)
	}
	if err := CheckLogStore(store, t.TempDir(), "n1"); err != nil {
		t.Fatalf("the same log, intact: %v", err)
	}
}
