package nodeconfig

import (
	"time"

	"github.com/hashicorp/raft"
)

// Hooks are the settings of a Config that only the tests of package
// cluster set (through its export_test.go); a Config built outside has
// none.
type Hooks struct {
	// WrapLogStore, if set, wraps the Raft log store (tests inject disk
	// faults).
	WrapLogStore func(raft.LogStore) raft.LogStore
	// WrapSnapshotStore, if set, wraps the Raft snapshot store (tests
	// inject failed snapshot writes).
	WrapSnapshotStore func(raft.SnapshotStore) raft.SnapshotStore
	// FreeKeySweep is how often the leader looks for records to forget;
	// 0 derives it from FreeKeyRetention (a tenth, between 10ms and a
	// minute).
	FreeKeySweep time.Duration
}

// TestHooks returns the hooks of c, to read or set.
func TestHooks(c *Config) *Hooks { return &c.hooks }

// Bounds of Config.EventHistory.
const (
	DefaultEventHistory = 10000
	MaxEventHistory     = 10_000_000
)

// Default readiness bounds (Config.ReadyMaxLagEntries, ReadyMaxLagTime).
const (
	DefaultReadyMaxLagEntries = 1000
	DefaultReadyMaxLagTime    = 5 * time.Second
)
