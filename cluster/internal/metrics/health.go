package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/cluster/internal/views"
)

// Health metrics, read at scrape time from the node's health.
var (
	descDiskWriteErrors = prometheus.NewDesc("tenure_disk_write_errors_total",
		"Failed writes of this node's Raft log and stable stores (raft.db) since it started: a full or failing disk.", nil, nil)
	descSnapshotWriteErrors = prometheus.NewDesc("tenure_snapshot_write_errors_total",
		"Snapshots this node failed to write since it started (taken, installed from the leader or restored): a full or failing disk. /readyz answers 503 until a snapshot succeeds.", nil, nil)
	descReplicationLagEntries = prometheus.NewDesc("tenure_replication_lag_entries",
		"Entries this node's applied index trails the highest commit index it has heard the leader announce (its own on the leader).", nil, nil)
	descReplicationLagSeconds = prometheus.NewDesc("tenure_replication_lag_seconds",
		"Seconds this node's applied index has trailed a commit index the leader announced; 0 when caught up.", nil, nil)
	descNodeHealthy = prometheus.NewDesc("tenure_node_healthy",
		"1 while this node's disk takes writes (Raft log, stable store and snapshots) and its lag is within -ready-max-lag-entries and -ready-max-lag-time (what /readyz checks besides leadership).", nil, nil)
)

// collectHealth sends the disk, snapshot and lag metrics.
func collectHealth(ch chan<- prometheus.Metric, h views.NodeHealth) {
	healthy := 1.0
	if h.Problem != "" {
		healthy = 0
	}
	ch <- prometheus.MustNewConstMetric(descDiskWriteErrors, prometheus.CounterValue, float64(h.DiskWriteErrors))
	ch <- prometheus.MustNewConstMetric(descSnapshotWriteErrors, prometheus.CounterValue, float64(h.SnapshotWriteErrors))
	ch <- prometheus.MustNewConstMetric(descReplicationLagEntries, prometheus.GaugeValue, float64(h.BehindEntries))
	ch <- prometheus.MustNewConstMetric(descReplicationLagSeconds, prometheus.GaugeValue, h.BehindFor.Seconds())
	ch <- prometheus.MustNewConstMetric(descNodeHealthy, prometheus.GaugeValue, healthy)
}

// Conns are the counts of one port's connection gate.
type Conns struct {
	// Port is "raft" or "gossip".
	Port    string
	Open    int
	Refused uint64
}

var (
	descConnsOpen    = prometheus.NewDesc("tenure_inbound_connections", "Open inbound connections of a port (raft, gossip).", []string{"port"}, nil)
	descConnsRefused = prometheus.NewDesc("tenure_inbound_connections_refused_total", "Inbound connections closed at accept because a cap of the port (in all, or per address) was reached.", []string{"port"}, nil)
)

// collectConns sends the counts of the connection gates of the Raft and
// gossip ports.
func collectConns(ch chan<- prometheus.Metric, conns []Conns) {
	for _, p := range conns {
		ch <- prometheus.MustNewConstMetric(descConnsOpen, prometheus.GaugeValue, float64(p.Open), p.Port)
		ch <- prometheus.MustNewConstMetric(descConnsRefused, prometheus.CounterValue, float64(p.Refused), p.Port)
	}
}
