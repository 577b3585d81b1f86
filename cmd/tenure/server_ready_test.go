package main

import (
	"strings"
	"testing"
	"time"
)

// -ready-max-lag-entries and -ready-max-lag-time have sound defaults, are
// set by flag, and bad values are refused naming the flag.
func TestServerReadyLagFlags(t *testing.T) {
	none := func(string) string { return "" }
	s, err := loadServerSettings([]string{"-data-dir", "d"}, none)
	if err != nil || s.cluster.ReadyMaxLagEntries != 1000 || s.cluster.ReadyMaxLagTime != 5*time.Second {
		t.Fatalf("defaults = %d, %v, %v; want 1000 entries, 5s", s.cluster.ReadyMaxLagEntries, s.cluster.ReadyMaxLagTime, err)
	}
	s, err = loadServerSettings([]string{"-data-dir", "d", "-ready-max-lag-entries", "50", "-ready-max-lag-time", "3s"}, none)
	if err != nil || s.cluster.ReadyMaxLagEntries != 50 || s.cluster.ReadyMaxLagTime != 3*time.Second {
		t.Fatalf("set = %d, %v, %v; want 50, 3s", s.cluster.ReadyMaxLagEntries, s.cluster.ReadyMaxLagTime, err)
	}
	for _, tc := range []struct {
		name, flag, value string
	}{
		{"no entries", "-ready-max-lag-entries", "0"},
		{"below the heartbeat timeout", "-ready-max-lag-time", "50ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := loadServerSettings([]string{"-data-dir", "d", tc.flag, tc.value}, none)
			if err == nil {
				err = s.cluster.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(tc.flag, "-")) {
				t.Errorf("%s %s: %v, want an error naming %s", tc.flag, tc.value, err, tc.flag)
			}
		})
	}
}

// `tenure status` shows how far the node trails the leader and why it is
// not ready.
func TestStatusShowsNotReady(t *testing.T) {
	full := map[string]any{"node_id": "n2", "role": "follower", "leader_id": "n1", "last_contact": "12ms",
		"applied_index": 10, "leader_commit_index": 5010, "behind_entries": 5000, "behind_for": "42s",
		"disk_write_errors": 3, "last_disk_error": "write raft.db: no space left on device",
		"not_ready": "raft log or stable store write failed 1s ago (3 failed writes): write raft.db: no space left on device"}
	noSnap := map[string]any{"node_id": "n2", "role": "follower", "leader_id": "n1", "last_contact": "12ms",
		"applied_index": 10, "leader_commit_index": 10, "behind_for": "0s",
		"snapshot_write_errors": 2, "last_snapshot_error": "write state.bin: no space left on device",
		"not_ready": "snapshot write failed 3s ago and none succeeded since (2 failed snapshots): write state.bin: no space left on device"}
	runRequestCases(t, []requestCase{
		{"status of a full follower", []string{"status"}, 200, full, "GET", "/v1/status", "",
			[]string{"Behind leader:", "5000 entries (commit index 5010) for 42s", "Disk write errors:", "3 (last: write raft.db", "Not ready:", "write failed 1s ago"}},
		{"status of a follower that cannot snapshot", []string{"status"}, 200, noSnap, "GET", "/v1/status", "",
			[]string{"Snapshot write errors:", "2 (last: write state.bin: no space left on device)", "Not ready:", "snapshot write failed 3s ago"}},
	})
}
