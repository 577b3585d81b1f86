package main

import (
	"fmt"

	"github.com/tenure-io/tenure/client"
)

// statusHealthRows adds how far the node trails the leader and, when it
// is not ready for its disk or its lag, why, to `tenure status`.
func statusHealthRows(st client.NodeStatus, field func(name string, v any)) {
	field("Behind leader", fmt.Sprintf("%d entries (commit index %d) for %s", st.BehindEntries, st.LeaderCommitIndex, dash(st.BehindFor)))
	if st.DiskWriteErrors > 0 {
		field("Disk write errors", fmt.Sprintf("%d (last: %s)", st.DiskWriteErrors, dash(st.LastDiskError)))
	}
	if st.SnapshotWriteErrors > 0 {
		field("Snapshot write errors", fmt.Sprintf("%d (last: %s)", st.SnapshotWriteErrors, dash(st.LastSnapshotError)))
	}
	if st.NotReady != "" {
		field("Not ready", st.NotReady)
	}
}
