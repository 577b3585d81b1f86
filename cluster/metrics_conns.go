package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/cluster/connlimit"
)

// connCollector reads the connection gates of the Raft and gossip ports at
// scrape time.
type connCollector struct{ n *Node }

var (
	descConnsOpen    = prometheus.NewDesc("tenure_inbound_connections", "Open inbound connections of a port (raft, gossip).", []string{"port"}, nil)
	descConnsRefused = prometheus.NewDesc("tenure_inbound_connections_refused_total", "Inbound connections closed at accept because a cap of the port (in all, or per address) was reached.", []string{"port"}, nil)
)

func (c *connCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descConnsOpen
	ch <- descConnsRefused
}

func (c *connCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range []struct {
		port string
		gate *connlimit.Gate
	}{{"raft", c.n.raftGate}, {"gossip", c.n.gossipGate}} {
		if p.gate == nil {
			continue
		}
		open, refused := p.gate.Counts()
		ch <- prometheus.MustNewConstMetric(descConnsOpen, prometheus.GaugeValue, float64(open), p.port)
		ch <- prometheus.MustNewConstMetric(descConnsRefused, prometheus.CounterValue, float64(refused), p.port)
	}
}
