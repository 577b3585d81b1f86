package main

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/cluster"
)

// handOver runs on SIGTERM or SIGINT before the HTTP server and the node
// stop: a leader hands leadership to the most up-to-date voter and waits,
// at most timeout, for the new leader, so that clients fail over in tens
// of milliseconds instead of an election timeout. A follower, or the only
// voter, has nothing to hand over. A failed hand-over is logged and the
// server stops anyway: the others elect a leader as after a crash.
func handOver(node *cluster.Node, timeout time.Duration, log hclog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	if _, err := node.Handover(ctx); err != nil {
		log.Warn("leadership hand-over failed; stopping anyway", "error", err, "waited", time.Since(start).Round(time.Millisecond))
	}
}
