package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/cluster/internal/views"
)

// Set is a node's Prometheus collectors that the node counts into. A nil
// Registerer leaves them unregistered but usable.
type Set struct {
	Acquisitions  prometheus.Counter
	Releases      prometheus.Counter
	Expiries      prometheus.Counter
	Conflicts     prometheus.Counter
	Renewals      *prometheus.CounterVec
	ApplyLatency  prometheus.Histogram
	BatchSize     prometheus.Histogram
	VerifyLatency prometheus.Histogram
	LeaderChanges prometheus.Counter
	Backups       *prometheus.CounterVec
	LastBackup    prometheus.Gauge
	// LogSuppressed counts the log lines that a limit left out, by
	// source.
	LogSuppressed *prometheus.CounterVec
}

// Config is what New works with.
type Config struct {
	// Registerer, when not nil, gets the Set and the collectors that read
	// Source at scrape time.
	Registerer prometheus.Registerer
	Source     Source
	// LogSources are the sources of LogSuppressed, shown at 0 from the
	// start.
	LogSources []string
}

// New makes the collectors and registers them with cfg.Registerer.
func New(cfg Config) *Set {
	m := &Set{
		Acquisitions:  counter("tenure_acquisitions_total", "Leases granted under a new token by this node as leader."),
		Releases:      counter("tenure_releases_total", "Leases freed by release or revoke on this node as leader."),
		Expiries:      counter("tenure_expiries_total", "Leases freed because their deadline passed."),
		Conflicts:     counter("tenure_conflicts_total", "Acquires refused because another holder had the key."),
		Renewals:      counterVec("tenure_renewals_total", "Renewals answered by this node as leader, by result.", "result"),
		ApplyLatency:  histogram("tenure_apply_duration_seconds", "Time to commit and apply one batch of lease commands.", prometheus.ExponentialBuckets(0.0005, 2, 14)),
		BatchSize:     histogram("tenure_apply_batch_commands", "Commands carried by one log entry.", prometheus.ExponentialBuckets(1, 2, 12)),
		VerifyLatency: histogram("tenure_verify_leader_duration_seconds", "Time of one batched leadership check (renewals, reads).", prometheus.ExponentialBuckets(0.0002, 2, 14)),
		LeaderChanges: counter("tenure_leader_changes_total", "Times this node gained or lost leadership."),
		Backups:       counterVec("tenure_backups_total", "Scheduled backups (-backup-dir) this node tried as leader, by result.", "result"),
		LastBackup:    gauge("tenure_last_backup_timestamp_seconds", "Unix time of this node's last backup written to -backup-dir (0: none yet)."),
		LogSuppressed: counterVec("tenure_log_lines_suppressed_total", "Log lines left out past the limit of 10 per kind every 10 s, by source: memberlist (gossip; mostly packets without the gossip key), raft_transport (connections to the Raft port that sent no Raft RPC).", "source"),
	}
	for _, s := range cfg.LogSources {
		m.LogSuppressed.WithLabelValues(s)
	}
	reg := cfg.Registerer
	if reg == nil {
		return m
	}
	leases := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tenure_leases", Help: "Keys in the local state machine, by state.",
	}, []string{"state"})
	reg.MustRegister(m.Acquisitions, m.Releases, m.Expiries, m.Conflicts, m.Renewals,
		m.ApplyLatency, m.BatchSize, m.VerifyLatency, m.LeaderChanges, m.Backups, m.LastBackup,
		m.LogSuppressed, &stateCollector{src: cfg.Source, leases: leases})
	return m
}

func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func counterVec(name, help, label string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
}

func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

func histogram(name, help string, buckets []float64) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
}

// ObserveApply records one batch of commands committed and applied in d.
func (m *Set) ObserveApply(d time.Duration, commands int) {
	m.ApplyLatency.Observe(d.Seconds())
	m.BatchSize.Observe(float64(commands))
}

// Source is what the collectors read at scrape time, on the scraping
// goroutine; its methods must be safe for concurrent use.
type Source interface {
	Placement
	// Node is the node's lease counts and Raft state now.
	Node() Node
	Health() views.NodeHealth
	Disk() Disk
	// Conns are the connection counts of the ports that have a gate.
	Conns() []Conns
}

// Node is the state of a node at a scrape.
type Node struct {
	Held, Free int
	// Leader: the node is the established leader.
	Leader                     bool
	LastIndex, Commit, Applied uint64
	Term                       uint64
	// Deadlines are the lease deadlines the leader's lessor tracks.
	Deadlines int
	LastToken uint64
	// Waiting are the blocking acquirers queued on this leader.
	Waiting int
	// FailureTolerance is how many more voters may fail before writes
	// stop, as this node judges it (Status.FailureTolerance).
	FailureTolerance int
}

// stateCollector reads lease counts and Raft state at scrape time.
type stateCollector struct {
	src    Source
	leases *prometheus.GaugeVec
}

var (
	descIsLeader = prometheus.NewDesc("tenure_is_leader", "1 while this node is the established leader.", nil, nil)
	descRaft     = prometheus.NewDesc("tenure_raft_index", "Raft indexes of this node, by kind.", []string{"kind"}, nil)
	descTerm     = prometheus.NewDesc("tenure_raft_term", "Current Raft term.", nil, nil)
	descTracked  = prometheus.NewDesc("tenure_lessor_deadlines", "Lease deadlines the leader's lessor tracks.", nil, nil)
	descToken    = prometheus.NewDesc("tenure_last_token", "Last fencing token handed out.", nil, nil)
	descWaiting  = prometheus.NewDesc("tenure_acquire_waiters", "Blocking acquirers queued on this leader.", nil, nil)
	descTolerate = prometheus.NewDesc("tenure_failure_tolerance", "How many more voters may fail before writes stop, as this server judges it (0 with no leader).", nil, nil)
)

// stateDescs are the metrics that stateCollector sends besides its leases.
var stateDescs = []*prometheus.Desc{
	descIsLeader, descRaft, descTerm, descTracked, descToken, descWaiting, descTolerate,
	descConnsOpen, descConnsRefused, descGroupKeys, descGroupStuck, descGroupDraining,
	descGroupOldestUnowned, descGroupWorkers, descGroupMaxPerWorker, descGroupBusiestWorker, descGroupRelativeLoad, descGroupImbalance,
	descGroupDisabled, descGroupProhibited, descGroupMinWorkers, descGroupEligible,
	descDiskWriteErrors, descSnapshotWriteErrors, descReplicationLagEntries,
	descReplicationLagSeconds, descNodeHealthy, descDataDirFree, descDataDirSize,
	descLastSnapshotTime, descLastSnapshotIndex,
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	c.leases.Describe(ch)
	for _, d := range stateDescs {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.src.Node()
	c.leases.WithLabelValues("held").Set(float64(n.Held))
	c.leases.WithLabelValues("free").Set(float64(n.Free))
	c.leases.Collect(ch)
	leader := 0.0
	if n.Leader {
		leader = 1
	}
	ch <- prometheus.MustNewConstMetric(descIsLeader, prometheus.GaugeValue, leader)
	ch <- prometheus.MustNewConstMetric(descRaft, prometheus.GaugeValue, float64(n.LastIndex), "last_log")
	ch <- prometheus.MustNewConstMetric(descRaft, prometheus.GaugeValue, float64(n.Commit), "commit")
	ch <- prometheus.MustNewConstMetric(descRaft, prometheus.GaugeValue, float64(n.Applied), "applied")
	ch <- prometheus.MustNewConstMetric(descTerm, prometheus.GaugeValue, float64(n.Term))
	ch <- prometheus.MustNewConstMetric(descTracked, prometheus.GaugeValue, float64(n.Deadlines))
	ch <- prometheus.MustNewConstMetric(descToken, prometheus.GaugeValue, float64(n.LastToken))
	ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, float64(n.Waiting))
	ch <- prometheus.MustNewConstMetric(descTolerate, prometheus.GaugeValue, float64(n.FailureTolerance))
	collectGroups(ch, c.src)
	collectHealth(ch, c.src.Health())
	collectDisk(ch, c.src.Disk())
	collectConns(ch, c.src.Conns())
}
