package metrics

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	gometrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"
)

// Raft, its bolt store and memberlist report their metrics through
// go-metrics, under keys such as raft.replication.appendEntries.rpc with
// the peer's server id as a label, and again with the id as a last part of
// the key. GoMetricsSink is the go-metrics sink that turns the keys it
// knows (goMetricsKeys) into Prometheus metrics with conventional names:
//
//   - the parts of the key in snake_case, joined by "_", after "tenure_";
//   - go-metrics labels as labels in snake_case, the peer's server id
//     (raft's peer_id) as "peer";
//   - timers (go-metrics measures milliseconds) as histograms in seconds,
//     named _seconds;
//   - counters named _total, and a unit (_bytes) where the key has one;
//   - gauges of recent activity (expire) forgotten after gaugeExpiry
//     without an update, so that they do not stay on a deposed leader;
//     other gauges keep the value last set.
//
// Keys it does not know are dropped, and so are raft's copies of its
// per-peer metrics with the peer's id in the key: the labelled calls carry
// the same values. Every name it exposes is therefore fixed, and
// documented in docs/metrics.md; the label values are the cluster's
// server ids, memberlist's node states and raft's RPC types.
type GoMetricsSink struct {
	byKey map[string]*goMetric

	mu     sync.Mutex
	gauges map[gaugeKey]gaugeValue

	// peers are the values of the peer label seen, so that RetainPeers
	// can drop the series of servers no longer in the configuration;
	// removed are those it dropped, whose emissions are ignored until a
	// configuration names them again (raft may report a last RPC to a
	// server after its removal committed).
	peersMu sync.RWMutex
	peers   map[string]bool
	removed map[string]bool
}

// gaugeExpiry is how long a gauge that go-metrics no longer sets stays
// exposed.
const gaugeExpiry = time.Minute

// goMetricKind says what a go-metrics key is: go-metrics' sample calls
// carry both timers and plain samples, which only the key tells apart.
type goMetricKind int

const (
	goCounter goMetricKind = iota
	goGauge
	goTimer  // a sample in milliseconds: a histogram in seconds
	goSample // a sample in the unit of the key: a histogram
	goMillisGauge
)

// goMetricKey declares one go-metrics key that the sink exposes.
type goMetricKey struct {
	key  string // the parts, joined by "."; without the service name "tenure"
	kind goMetricKind
	// unit is added to the name (before _total): "bytes"; timers get
	// "seconds".
	unit string
	// labels are the Prometheus labels, from go-metrics labels of the
	// same name in snake_case ("peer" from "peer_id").
	labels  []string
	buckets []float64
	// expire: a gauge of recent activity, dropped gaugeExpiry after its
	// last update.
	expire bool
	help   string
}

var (
	secondsBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	countBuckets   = prometheus.ExponentialBuckets(1, 2, 12)
	bytesBuckets   = prometheus.ExponentialBuckets(64, 4, 10)
	ratioBuckets   = prometheus.LinearBuckets(0.1, 0.1, 10)
)

// goMetricsKeys are the keys of hashicorp/raft v1.7, raft-boltdb/v2 and
// memberlist v0.6 that the sink exposes (their sources: metrics.* calls).
var goMetricsKeys = []goMetricKey{
	// raft: API calls on this server.
	{key: "raft.apply", kind: goCounter, help: "Commands given to Raft's Apply on this server (as leader)."},
	{key: "raft.barrier", kind: goCounter, help: "Raft barriers issued on this server (as leader)."},
	{key: "raft.verify_leader", kind: goCounter, help: "Raft VerifyLeader calls on this server."},
	{key: "raft.restore", kind: goCounter, help: "Snapshots restored into the cluster by an operator through this server (Raft's Restore)."},
	{key: "raft.restoreUserSnapshot", kind: goTimer, help: "Time to restore an operator's snapshot (Raft's Restore)."},
	// raft: state changes.
	{key: "raft.state.follower", kind: goCounter, help: "Times this server entered the follower state."},
	{key: "raft.state.candidate", kind: goCounter, help: "Times this server started an election."},
	{key: "raft.state.leader", kind: goCounter, help: "Times this server became leader."},
	{key: "raft.transition.heartbeat_timeout", kind: goCounter, help: "Times this server, as follower, heard from no leader within the heartbeat timeout and became a candidate."},
	{key: "raft.transition.leader_lease_timeout", kind: goCounter, help: "Times this server, as leader, lost contact with a quorum for the leader lease timeout and stepped down."},
	{key: "raft.candidate.electSelf", kind: goTimer, help: "Time to ask the other voters for their votes in an election."},
	{key: "raft.candidate.preElectSelf", kind: goTimer, help: "Time to ask the other voters for their pre-votes."},
	{key: "raft.peers", kind: goGauge, help: "Servers in the Raft configuration, as this server last counted them as leader (set on changes of the configuration)."},
	// raft: the leader's log and commits.
	{key: "raft.leader.dispatchLog", kind: goTimer, help: "Time for the leader to write a batch of entries to its own log."},
	{key: "raft.leader.dispatchNumLogs", kind: goGauge, expire: true, help: "Entries in the leader's last batch written to its log (leader only; gone a minute after the last write)."},
	{key: "raft.leader.lastContact", kind: goTimer, help: "Time since the leader last heard from each follower, sampled at each check of its lease."},
	{key: "raft.commitTime", kind: goTimer, help: "Time from the leader writing an entry to its log to the entry being committed (leader only)."},
	{key: "raft.commitNumLogs", kind: goGauge, expire: true, help: "Entries committed together in the leader's last commit (leader only; gone a minute after the last commit)."},
	// raft: replication from the leader, per follower.
	{key: "raft.replication.appendEntries.rpc", kind: goTimer, labels: []string{"peer"}, help: "Time of one AppendEntries RPC from the leader to a follower that carried entries."},
	{key: "raft.replication.appendEntries.logs", kind: goCounter, labels: []string{"peer"}, help: "Log entries the leader sent to a follower."},
	{key: "raft.replication.heartbeat", kind: goTimer, labels: []string{"peer"}, help: "Time of one heartbeat from the leader to a follower."},
	{key: "raft.replication.installSnapshot", kind: goTimer, labels: []string{"peer"}, help: "Time to send a snapshot to a follower that was too far behind for the log."},
	// raft: RPCs this server handled.
	{key: "raft.rpc.appendEntries", kind: goTimer, help: "Time to handle an AppendEntries RPC (as follower)."},
	{key: "raft.rpc.appendEntries.storeLogs", kind: goTimer, help: "Time to write the entries of an AppendEntries RPC to the log (as follower)."},
	{key: "raft.rpc.appendEntries.processLogs", kind: goTimer, help: "Time to hand committed entries of an AppendEntries RPC to the state machine (as follower)."},
	{key: "raft.rpc.processHeartbeat", kind: goTimer, help: "Time to handle a heartbeat (as follower)."},
	{key: "raft.rpc.requestVote", kind: goTimer, help: "Time to handle a vote or pre-vote request."},
	{key: "raft.rpc.installSnapshot", kind: goTimer, help: "Time to receive and install a snapshot from the leader."},
	{key: "raft.net.getRPCType", kind: goTimer, help: "Time to read the type byte of an incoming Raft RPC."},
	{key: "raft.net.rpcDecode", kind: goTimer, labels: []string{"rpc_type"}, help: "Time to decode an incoming Raft RPC, by type."},
	{key: "raft.net.rpcEnqueue", kind: goTimer, labels: []string{"rpc_type"}, help: "Time for an incoming Raft RPC to be taken by Raft's main loop, by type."},
	{key: "raft.net.rpcRespond", kind: goTimer, labels: []string{"rpc_type"}, help: "Time from an incoming Raft RPC taken to its answer, by type."},
	// raft: the state machine.
	{key: "raft.fsm.apply", kind: goTimer, help: "Time to apply one entry to the state machine."},
	{key: "raft.fsm.applyBatch", kind: goTimer, help: "Time to apply one batch of entries to the state machine."},
	{key: "raft.fsm.applyBatchNum", kind: goSample, buckets: countBuckets, help: "Entries in one batch applied to the state machine."},
	{key: "raft.fsm.enqueue", kind: goTimer, help: "Time to hand committed entries to the state machine's goroutine."},
	{key: "raft.fsm.store_config", kind: goTimer, help: "Time to handle a configuration entry."},
	{key: "raft.fsm.snapshot", kind: goTimer, help: "Time for the state machine to capture a snapshot."},
	{key: "raft.fsm.restore", kind: goTimer, help: "Time for the state machine to restore a snapshot."},
	{key: "raft.fsm.lastRestoreDuration", kind: goMillisGauge, unit: "seconds", help: "Time of the last restore of a snapshot into the state machine."},
	{key: "raft.thread.main.saturation", kind: goSample, unit: "ratio", buckets: ratioBuckets, help: "Share of time Raft's main goroutine was busy, sampled about every second."},
	{key: "raft.thread.fsm.saturation", kind: goSample, unit: "ratio", buckets: ratioBuckets, help: "Share of time the state machine's goroutine was busy, sampled about every second."},
	// raft: snapshots and compaction.
	{key: "raft.snapshot.takeSnapshot", kind: goTimer, help: "Time to take a snapshot and compact the log."},
	{key: "raft.snapshot.create", kind: goTimer, help: "Time to create a snapshot in the snapshot store."},
	{key: "raft.snapshot.persist", kind: goTimer, help: "Time to write a snapshot to disk."},
	{key: "raft.compactLogs", kind: goTimer, help: "Time to remove the entries a snapshot covers from the log."},
	{key: "raft.removeOldLogs", kind: goTimer, help: "Time to remove old entries from the log."},
	// raft-boltdb: the log store (raft.db).
	{key: "raft.boltdb.getLog", kind: goTimer, help: "Time to read one entry from the log store."},
	{key: "raft.boltdb.storeLogs", kind: goTimer, help: "Time to write a batch of entries to the log store (with its fsync)."},
	{key: "raft.boltdb.logSize", kind: goSample, unit: "bytes", buckets: bytesBuckets, help: "Size of one entry written to the log store."},
	{key: "raft.boltdb.logsPerBatch", kind: goSample, buckets: countBuckets, help: "Entries in one batch written to the log store."},
	{key: "raft.boltdb.logBatchSize", kind: goSample, unit: "bytes", buckets: bytesBuckets, help: "Size of one batch of entries written to the log store."},
	{key: "raft.boltdb.writeCapacity", kind: goSample, buckets: prometheus.ExponentialBuckets(100, 4, 10), help: "Entries per second the log store would take at the speed of its last write."},
	// memberlist: gossip.
	{key: "memberlist.gossip", kind: goTimer, help: "Time of one round of gossip."},
	{key: "memberlist.probeNode", kind: goTimer, help: "Time of one failure-detector probe of another member."},
	{key: "memberlist.pushPullNode", kind: goTimer, help: "Time of one full state exchange with another member."},
	{key: "memberlist.msg.alive", kind: goCounter, help: "Alive messages about members handled."},
	{key: "memberlist.msg.suspect", kind: goCounter, help: "Suspect messages about members handled."},
	{key: "memberlist.msg.dead", kind: goCounter, help: "Dead messages about members handled."},
	{key: "memberlist.degraded.probe", kind: goCounter, help: "Probes made while this server's health score was degraded."},
	{key: "memberlist.degraded.timeout", kind: goCounter, help: "Suspicion timeouts reached while this server's health score was degraded."},
	{key: "memberlist.health.score", kind: goGauge, help: "This server's memberlist health score (0 healthy; higher: it is slow to answer probes)."},
	{key: "memberlist.node.instances", kind: goGauge, labels: []string{"node_state"}, help: "Members of the gossip pool by state (alive, suspect, dead, left)."},
	{key: "memberlist.queue.broadcasts", kind: goSample, buckets: countBuckets, help: "Gossip messages queued for broadcast, sampled."},
	{key: "memberlist.size.local", kind: goGauge, unit: "bytes", help: "Size of this server's state in the last full state exchange."},
	{key: "memberlist.size.remote", kind: goSample, unit: "bytes", buckets: bytesBuckets, help: "Size of a remote member's state received in a full state exchange."},
	{key: "memberlist.tcp.accept", kind: goCounter, help: "Gossip TCP connections accepted."},
	{key: "memberlist.tcp.connect", kind: goCounter, help: "Gossip TCP connections made."},
	{key: "memberlist.tcp.sent", kind: goCounter, unit: "bytes", help: "Bytes sent over gossip TCP connections."},
	{key: "memberlist.udp.sent", kind: goCounter, unit: "bytes", help: "Bytes sent in gossip UDP packets."},
	{key: "memberlist.udp.received", kind: goCounter, unit: "bytes", help: "Bytes received in gossip UDP packets."},
}

// goMetric is the Prometheus side of one key.
type goMetric struct {
	decl      goMetricKey
	name      string
	counter   *prometheus.CounterVec
	histogram *prometheus.HistogramVec
	gauge     *prometheus.Desc
}

type gaugeKey struct {
	m      *goMetric
	values string // label values joined by "\xff"
}

type gaugeValue struct {
	v  float64
	at time.Time
}

// NewGoMetricsSink registers the metrics of goMetricsKeys with reg and
// returns the sink that feeds them; give it to go-metrics (NewGlobal),
// whose TimerGranularity must stay at its default, a millisecond.
// Counters and histograms without labels are exposed from the start, at
// zero.
func NewGoMetricsSink(reg prometheus.Registerer) (*GoMetricsSink, error) {
	s := &GoMetricsSink{byKey: make(map[string]*goMetric, len(goMetricsKeys)), gauges: make(map[gaugeKey]gaugeValue), peers: map[string]bool{}, removed: map[string]bool{}}
	var cs []prometheus.Collector
	for _, d := range goMetricsKeys {
		m := &goMetric{decl: d, name: goMetricName(d.key, d.kind, d.unit)}
		switch d.kind {
		case goCounter:
			m.counter = prometheus.NewCounterVec(prometheus.CounterOpts{Name: m.name, Help: d.help}, d.labels)
			if len(d.labels) == 0 {
				m.counter.WithLabelValues()
			}
			cs = append(cs, m.counter)
		case goTimer, goSample:
			b := d.buckets
			if b == nil {
				b = secondsBuckets
			}
			m.histogram = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: m.name, Help: d.help, Buckets: b}, d.labels)
			if len(d.labels) == 0 {
				m.histogram.WithLabelValues()
			}
			cs = append(cs, m.histogram)
		case goGauge, goMillisGauge:
			m.gauge = prometheus.NewDesc(m.name, d.help, d.labels, nil)
		}
		s.byKey[d.key] = m
	}
	cs = append(cs, s)
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// goMetricName is the Prometheus name of a go-metrics key (parts joined
// by "."): raft.net.getRPCType, a timer, is tenure_raft_net_get_rpc_type_seconds.
func goMetricName(key string, kind goMetricKind, unit string) string {
	var b strings.Builder
	b.WriteString("tenure")
	for _, p := range strings.Split(key, ".") {
		b.WriteByte('_')
		b.WriteString(snakeCase(p))
	}
	if kind == goTimer {
		unit = "seconds"
	}
	if unit != "" {
		b.WriteString("_" + unit)
	}
	if kind == goCounter {
		b.WriteString("_total")
	}
	return b.String()
}

// snakeCase turns camelCase into snake_case: an underscore before an upper
// case letter that follows a lower case letter or digit, or that starts a
// word after an acronym (getRPCType: get_rpc_type).
func snakeCase(s string) string {
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 {
			prev := r[i-1]
			nextLower := i+1 < len(r) && unicode.IsLower(r[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// lookup returns the metric of key, or nil for a key the sink drops. It
// joins the key's parts on the stack: Raft reports several metrics for
// each entry it commits.
func (s *GoMetricsSink) lookup(key []string) *goMetric {
	if len(key) > 0 && key[0] == "tenure" {
		key = key[1:]
	}
	var buf [128]byte
	b := buf[:0]
	for i, p := range key {
		if i > 0 {
			b = append(b, '.')
		}
		b = append(b, p...)
	}
	return s.byKey[string(b)] // no copy: the compiler looks the bytes up as they are
}

// labelValues orders the values of labels as m declares its labels; a
// label it does not declare is dropped, one it declares and does not get
// is "". peer is the value of the peer label, if m has one.
func (m *goMetric) labelValues(labels []gometrics.Label) (values []string, peer string) {
	values = make([]string, len(m.decl.labels))
	for _, l := range labels {
		name := labelName(l.Name)
		for i, want := range m.decl.labels {
			if want == name {
				values[i] = l.Value
				if name == "peer" {
					peer = l.Value
				}
			}
		}
	}
	return values, peer
}

// labelName is the Prometheus name of a go-metrics label: snake_case, and
// raft's peer_id as peer. The labels Raft sends on every RPC are named
// without building a string.
func labelName(name string) string {
	switch name {
	case "peer_id":
		return "peer"
	case "rpcType":
		return "rpc_type"
	}
	name = snakeCase(name)
	if name == "peer_id" {
		return "peer"
	}
	return name
}

// emit hands f the label values of an emission of m, unless they name a
// peer that RetainPeers removed. An emission with a peer runs f under
// peersMu, so that RetainPeers cannot drop its series between the check
// and the write (which would bring the series back for good).
func (s *GoMetricsSink) emit(m *goMetric, labels []gometrics.Label, f func(values []string)) {
	values, peer := m.labelValues(labels)
	if peer == "" {
		f(values)
		return
	}
	s.peersMu.RLock()
	if s.peers[peer] {
		f(values)
		s.peersMu.RUnlock()
		return
	}
	removed := s.removed[peer]
	s.peersMu.RUnlock()
	if removed {
		return
	}
	s.peersMu.Lock()
	defer s.peersMu.Unlock()
	if !s.removed[peer] {
		s.peers[peer] = true
		f(values)
	}
}

// RetainPeers drops every series whose peer label names a server that is
// not in ids, the servers of a committed Raft configuration, and ignores
// that server's emissions until a configuration names it again: a removed
// server's replication metrics do not stay exposed. The node calls it on
// each committed configuration (Config.PeerMetrics).
func (s *GoMetricsSink) RetainPeers(ids []string) {
	keep := make(map[string]bool, len(ids))
	for _, id := range ids {
		keep[id] = true
	}
	s.peersMu.Lock()
	defer s.peersMu.Unlock()
	for id := range keep {
		delete(s.removed, id)
	}
	var gone []string
	for p := range s.peers {
		if !keep[p] {
			gone = append(gone, p)
			delete(s.peers, p)
			s.removed[p] = true
		}
	}
	if len(gone) == 0 {
		return
	}
	for _, p := range gone {
		match := prometheus.Labels{"peer": p}
		for _, m := range s.byKey {
			if !slices.Contains(m.decl.labels, "peer") {
				continue
			}
			switch {
			case m.counter != nil:
				m.counter.DeletePartialMatch(match)
			case m.histogram != nil:
				m.histogram.DeletePartialMatch(match)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	maps.DeleteFunc(s.gauges, func(k gaugeKey, _ gaugeValue) bool {
		i := slices.Index(k.m.decl.labels, "peer")
		return i >= 0 && slices.Contains(gone, strings.Split(k.values, "\xff")[i])
	})
}

// SetGauge is part of go-metrics' MetricSink.
func (s *GoMetricsSink) SetGauge(key []string, val float32) {
	s.SetGaugeWithLabels(key, val, nil)
}

// SetGaugeWithLabels is part of go-metrics' MetricSink.
func (s *GoMetricsSink) SetGaugeWithLabels(key []string, val float32, labels []gometrics.Label) {
	m := s.lookup(key)
	if m == nil || m.gauge == nil {
		return
	}
	v := float64(val)
	if m.decl.kind == goMillisGauge {
		v /= 1000
	}
	s.emit(m, labels, func(values []string) {
		k := gaugeKey{m: m, values: strings.Join(values, "\xff")}
		s.mu.Lock()
		s.gauges[k] = gaugeValue{v: v, at: time.Now()}
		s.mu.Unlock()
	})
}

// EmitKey is part of go-metrics' MetricSink; no key tenure exposes uses it.
func (s *GoMetricsSink) EmitKey(key []string, val float32) {}

// IncrCounter is part of go-metrics' MetricSink.
func (s *GoMetricsSink) IncrCounter(key []string, val float32) {
	s.IncrCounterWithLabels(key, val, nil)
}

// IncrCounterWithLabels is part of go-metrics' MetricSink.
func (s *GoMetricsSink) IncrCounterWithLabels(key []string, val float32, labels []gometrics.Label) {
	m := s.lookup(key)
	if m == nil || m.counter == nil || val < 0 {
		return
	}
	s.emit(m, labels, func(values []string) { m.counter.WithLabelValues(values...).Add(float64(val)) })
}

// AddSample is part of go-metrics' MetricSink.
func (s *GoMetricsSink) AddSample(key []string, val float32) {
	s.AddSampleWithLabels(key, val, nil)
}

// AddSampleWithLabels is part of go-metrics' MetricSink; timers come here
// in milliseconds.
func (s *GoMetricsSink) AddSampleWithLabels(key []string, val float32, labels []gometrics.Label) {
	m := s.lookup(key)
	if m == nil || m.histogram == nil {
		return
	}
	v := float64(val)
	if m.decl.kind == goTimer {
		v /= 1000
	}
	s.emit(m, labels, func(values []string) { m.histogram.WithLabelValues(values...).Observe(v) })
}

// Describe is part of prometheus.Collector: the gauges.
func (s *GoMetricsSink) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range s.byKey {
		if m.gauge != nil {
			ch <- m.gauge
		}
	}
}

// Collect is part of prometheus.Collector: the gauges set within
// gaugeExpiry.
func (s *GoMetricsSink) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, g := range s.gauges {
		if k.m.decl.expire && now.Sub(g.at) > gaugeExpiry {
			delete(s.gauges, k)
			continue
		}
		var values []string
		if len(k.m.decl.labels) > 0 {
			values = strings.Split(k.values, "\xff")
		}
		ch <- prometheus.MustNewConstMetric(k.m.gauge, prometheus.GaugeValue, g.v, values...)
	}
}

var _ gometrics.MetricSink = (*GoMetricsSink)(nil)
