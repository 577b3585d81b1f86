package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// connCollector reads the connection gates of the Raft and gossip ports at
// scrape time.
type connCollector struct{ src Source }

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

func (c *connCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descConnsOpen
	ch <- descConnsRefused
}

func (c *connCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.src.Conns() {
		ch <- prometheus.MustNewConstMetric(descConnsOpen, prometheus.GaugeValue, float64(p.Open), p.Port)
		ch <- prometheus.MustNewConstMetric(descConnsRefused, prometheus.CounterValue, float64(p.Refused), p.Port)
	}
}
