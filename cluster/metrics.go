package cluster

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the node's Prometheus collectors. A nil Registerer leaves
// them unregistered but usable.
type metrics struct {
	acquisitions  prometheus.Counter
	releases      prometheus.Counter
	expiries      prometheus.Counter
	conflicts     prometheus.Counter
	renewals      *prometheus.CounterVec
	applyLatency  prometheus.Histogram
	batchSize     prometheus.Histogram
	verifyLatency prometheus.Histogram
	leaderChanges prometheus.Counter
	backups       *prometheus.CounterVec
	lastBackup    prometheus.Gauge
	// logSuppressed counts the log lines that a limit left out
	// (log_limits.go), by source.
	logSuppressed *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, n *Node) *metrics {
	m := &metrics{
		acquisitions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tenure_acquisitions_total", Help: "Leases granted under a new token by this node as leader.",
		}),
		releases: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tenure_releases_total", Help: "Leases freed by release or revoke on this node as leader.",
		}),
		expiries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tenure_expiries_total", Help: "Leases freed because their deadline passed.",
		}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tenure_conflicts_total", Help: "Acquires refused because another holder had the key.",
		}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenure_renewals_total", Help: "Renewals answered by this node as leader, by result.",
		}, []string{"result"}),
		applyLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tenure_apply_duration_seconds", Help: "Time to commit and apply one batch of lease commands.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tenure_apply_batch_commands", Help: "Commands carried by one log entry.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 12),
		}),
		verifyLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tenure_verify_leader_duration_seconds", Help: "Time of one batched leadership check (renewals, reads).",
			Buckets: prometheus.ExponentialBuckets(0.0002, 2, 14),
		}),
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tenure_leader_changes_total", Help: "Times this node gained or lost leadership.",
		}),
		backups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenure_backups_total", Help: "Scheduled backups (-backup-dir) this node tried as leader, by result.",
		}, []string{"result"}),
		lastBackup: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tenure_last_backup_timestamp_seconds", Help: "Unix time of this node's last backup written to -backup-dir (0: none yet).",
		}),
		logSuppressed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenure_log_lines_suppressed_total", Help: "Log lines left out past the limit of 10 per kind every 10 s, by source: memberlist (gossip; mostly packets without the gossip key), raft_transport (connections to the Raft port that sent no Raft RPC).",
		}, []string{"source"}),
	}
	for _, s := range []string{logSourceMemberlist, logSourceRaftTransport} {
		m.logSuppressed.WithLabelValues(s)
	}
	if reg == nil {
		return m
	}
	leases := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tenure_leases", Help: "Keys in the local state machine, by state.",
	}, []string{"state"})
	reg.MustRegister(m.acquisitions, m.releases, m.expiries, m.conflicts, m.renewals,
		m.applyLatency, m.batchSize, m.verifyLatency, m.leaderChanges, m.backups, m.lastBackup,
		m.logSuppressed,
		&stateCollector{n: n, leases: leases}, &connCollector{n: n},
	)
	return m
}

func (m *metrics) observeApply(d time.Duration, commands int) {
	m.applyLatency.Observe(d.Seconds())
	m.batchSize.Observe(float64(commands))
}

// stateCollector reads lease counts and Raft state at scrape time.
type stateCollector struct {
	n      *Node
	leases *prometheus.GaugeVec
}

var (
	descIsLeader = prometheus.NewDesc("tenure_is_leader", "1 while this node is the established leader.", nil, nil)
	descRaft     = prometheus.NewDesc("tenure_raft_index", "Raft indexes of this node, by kind.", []string{"kind"}, nil)
	descTerm     = prometheus.NewDesc("tenure_raft_term", "Current Raft term.", nil, nil)
	descTracked  = prometheus.NewDesc("tenure_lessor_deadlines", "Lease deadlines the leader's lessor tracks.", nil, nil)
	descToken    = prometheus.NewDesc("tenure_last_token", "Last fencing token handed out.", nil, nil)
	descWaiting  = prometheus.NewDesc("tenure_acquire_waiters", "Blocking acquirers queued on this leader.", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	c.leases.Describe(ch)
	ch <- descIsLeader
	ch <- descRaft
	ch <- descTerm
	ch <- descTracked
	ch <- descToken
	ch <- descWaiting
	describeGroups(ch)
	describeHealth(ch)
	describeDisk(ch)
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	held, free := c.n.machine.Counts()
	c.leases.WithLabelValues("held").Set(float64(held))
	c.leases.WithLabelValues("free").Set(float64(free))
	c.leases.Collect(ch)
	leader := 0.0
	if c.n.Ready() == nil {
		leader = 1
	}
	ch <- prometheus.MustNewConstMetric(descIsLeader, prometheus.GaugeValue, leader)
	r := c.n.raft
	ch <- prometheus.MustNewConstMetric(descRaft, prometheus.GaugeValue, float64(r.LastIndex()), "last_log")
	ch <- prometheus.MustNewConstMetric(descRaft, prometheus.GaugeValue, float64(r.CommitIndex()), "commit")
	ch <- prometheus.MustNewConstMetric(descRaft, prometheus.GaugeValue, float64(r.AppliedIndex()), "applied")
	ch <- prometheus.MustNewConstMetric(descTerm, prometheus.GaugeValue, float64(r.CurrentTerm()))
	ch <- prometheus.MustNewConstMetric(descTracked, prometheus.GaugeValue, float64(c.n.lessor.Len()))
	ch <- prometheus.MustNewConstMetric(descToken, prometheus.GaugeValue, float64(c.n.machine.LastToken()))
	ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, float64(c.n.Waiting()))
	c.n.collectGroups(ch)
	c.n.collectHealth(ch)
	c.n.collectDisk(ch)
}
