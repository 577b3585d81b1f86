// Package metrics is the Prometheus side of a node: the counters and
// histograms the node counts into (Set), the collectors that read the
// node's state at scrape time (leases, Raft, placement, health, disk,
// connections), and GoMetricsSink, which turns the go-metrics keys of
// Raft, its store and memberlist into Prometheus metrics.
//
// Every name and help text here is documented in docs/metrics.md, and a
// test checks that they agree. This package reads what it is given at
// scrape time and must never change the node's state, nor block a scrape
// on the network or on Raft.
package metrics
