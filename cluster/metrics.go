package cluster

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/cluster/internal/connlimit"
	"github.com/tenure-io/tenure/cluster/internal/limitedlog"
	metricset "github.com/tenure-io/tenure/cluster/internal/metrics"
	"github.com/tenure-io/tenure/cluster/internal/placement"
	"github.com/tenure-io/tenure/fsm"
)

// GoMetricsSink is the go-metrics sink that turns the keys of Raft, its
// store and memberlist into Prometheus metrics (see internal/metrics).
type GoMetricsSink = metricset.GoMetricsSink

// NewGoMetricsSink registers the metrics of the go-metrics keys the sink
// knows with reg and returns the sink that feeds them; give it to
// go-metrics (NewGlobal), whose TimerGranularity must stay at its
// default, a millisecond.
func NewGoMetricsSink(reg prometheus.Registerer) (*GoMetricsSink, error) {
	return metricset.NewGoMetricsSink(reg)
}

// newMetrics returns the node's Prometheus collectors. A nil Registerer
// leaves them unregistered but usable.
func newMetrics(reg prometheus.Registerer, n *Node) *metricset.Set {
	return metricset.New(metricset.Config{Registerer: reg, Source: metricsSource{n: n, Machine: n.machine},
		LogSources: []string{limitedlog.SourceMemberlist, limitedlog.SourceRaftTransport}})
}

// metricsSource is what the collectors read of n at scrape time; its
// Machine answers for the groups, leases, controls and drained workers.
type metricsSource struct {
	n *Node
	*fsm.Machine
}

func (s metricsSource) Node() metricset.Node {
	n := s.n
	held, free := n.machine.Counts()
	r := n.raft
	return metricset.Node{Held: held, Free: free, Leader: n.Ready() == nil,
		LastIndex: r.LastIndex(), Commit: r.CommitIndex(), Applied: r.AppliedIndex(), Term: r.CurrentTerm(),
		Deadlines: n.lessor.Len(), LastToken: n.machine.LastToken(), Waiting: n.Waiting(),
		FailureTolerance: n.Status().FailureTolerance}
}

func (s metricsSource) Health() NodeHealth { return s.n.Health() }

func (s metricsSource) Disk() metricset.Disk {
	d := metricset.Disk{DataDir: s.n.cfg.DataDir}
	if s.n.snaps == nil {
		return d
	}
	if metas, err := s.n.snaps.List(); err == nil && len(metas) > 0 {
		newest := metas[0] // List sorts newest first
		d.Snapshot, d.SnapshotIndex, d.SnapshotID = true, newest.Index, newest.ID
	}
	return d
}

func (s metricsSource) Conns() []metricset.Conns {
	var out []metricset.Conns
	for _, p := range []struct {
		port string
		gate *connlimit.Gate
	}{{"raft", s.n.raftGate}, {"gossip", s.n.gossipGate}} {
		if p.gate == nil {
			continue
		}
		open, refused := p.gate.Counts()
		out = append(out, metricset.Conns{Port: p.port, Open: open, Refused: refused})
	}
	return out
}

func (s metricsSource) Admits(worker, group string) bool {
	admit := s.n.admission()
	return admit == nil || admit(worker, group)
}

func (s metricsSource) Workers() []Member { return liveWorkers(s.n.workerMembers()) }

func (s metricsSource) RelativeLoads(g *fsm.Group, workers []Member) map[string]float64 {
	p := s.n.leading.Load()
	if p == nil {
		return nil // the loads are the leader's
	}
	return placement.RelativeLoads(g, workers, s.n.machine.Drained, s.n.admission(), s.n.machine.Control, p.loads)
}

func (s metricsSource) OldestUnowned() map[string]time.Duration {
	p := s.n.leading.Load()
	if p == nil {
		return nil
	}
	free, _, _ := p.stuck.Report()
	oldest := make(map[string]time.Duration)
	for _, k := range free {
		oldest[k.Group] = max(oldest[k.Group], k.For)
	}
	return oldest
}
