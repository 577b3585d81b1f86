package metrics

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Disk and snapshot metrics, read at scrape time: the file system of
// -data-dir (statfs, where the platform has it) and the newest snapshot in
// the snapshot store.
var (
	descDataDirFree = prometheus.NewDesc("tenure_data_dir_free_bytes",
		"Bytes available to tenure on the file system that holds -data-dir (Linux, macOS and FreeBSD).", nil, nil)
	descDataDirSize = prometheus.NewDesc("tenure_data_dir_size_bytes",
		"Size in bytes of the file system that holds -data-dir (Linux, macOS and FreeBSD).", nil, nil)
	descLastSnapshotTime = prometheus.NewDesc("tenure_raft_last_snapshot_timestamp_seconds",
		"Unix time at which this server's newest Raft snapshot was taken or received (absent while it has none).", nil, nil)
	descLastSnapshotIndex = prometheus.NewDesc("tenure_raft_last_snapshot_index",
		"Raft index that this server's newest snapshot covers (absent while it has none).", nil, nil)
)

// Disk is where a node keeps its data, at a scrape.
type Disk struct {
	DataDir string
	// Snapshot: the node has a snapshot; SnapshotIndex and SnapshotID
	// are those of its newest.
	Snapshot      bool
	SnapshotIndex uint64
	SnapshotID    string
}

// collectDisk sends the disk and snapshot metrics.
func collectDisk(ch chan<- prometheus.Metric, d Disk) {
	if free, size, ok := fileSystemSpace(d.DataDir); ok {
		ch <- prometheus.MustNewConstMetric(descDataDirFree, prometheus.GaugeValue, float64(free))
		ch <- prometheus.MustNewConstMetric(descDataDirSize, prometheus.GaugeValue, float64(size))
	}
	if !d.Snapshot {
		return
	}
	ch <- prometheus.MustNewConstMetric(descLastSnapshotIndex, prometheus.GaugeValue, float64(d.SnapshotIndex))
	if at, ok := snapshotTakenAt(d.SnapshotID); ok {
		ch <- prometheus.MustNewConstMetric(descLastSnapshotTime, prometheus.GaugeValue, at)
	}
}

// snapshotTakenAt reads the time, in Unix seconds, from the id that Raft's
// file snapshot store gives a snapshot: term-index-milliseconds.
func snapshotTakenAt(id string) (float64, bool) {
	parts := strings.Split(id, "-")
	if len(parts) != 3 {
		return 0, false
	}
	ms, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || ms <= 0 {
		return 0, false
	}
	return float64(ms) / 1000, true
}
