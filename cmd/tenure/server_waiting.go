package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/cluster"
)

// noLeaderWarnAfter is how long a server runs without knowing a leader
// before it says why it waits, and how often it says it again.
const noLeaderWarnAfter = 10 * time.Second

// warnWhileNoLeader logs, every noLeaderWarnAfter while node knows no
// leader, what the server waits for and what would end the wait: a server
// started with none of -bootstrap-expect, -initial-cluster and -join
// waited silently for ever. It returns when ctx ends.
func warnWhileNoLeader(ctx context.Context, node *cluster.Node, cfg cluster.Config, log hclog.Logger) {
	t := time.NewTicker(noLeaderWarnAfter)
	defer t.Stop()
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if st := node.Status(); st.LeaderID == "" {
			log.Warn("no leader yet: "+waitingFor(cfg, len(st.Servers)), "for", time.Since(start).Round(time.Second), "servers_in_raft_configuration", len(st.Servers))
		}
	}
}

// waitingFor says what a server with the settings of cfg, whose Raft
// configuration holds servers, waits for before a leader is elected.
func waitingFor(cfg cluster.Config, servers int) string {
	switch {
	case servers > 0:
		return "a quorum of the voters of the Raft configuration must answer each other (check that the other servers run and that their -raft-addr is reachable; tenure status against one of them)"
	case cfg.BootstrapExpect > 0:
		return fmt.Sprintf("-bootstrap-expect %d: waiting until %d servers started with the same value see each other over gossip (give each the others' gossip addresses with -join)", cfg.BootstrapExpect, cfg.BootstrapExpect)
	case len(cfg.InitialCluster) > 0:
		return "-initial-cluster: waiting for its servers to answer over Raft"
	case len(cfg.Join) > 0:
		return "this server has no Raft state and waits for the cluster it joined over gossip (-join) to admit it; a new cluster needs -bootstrap-expect N on each of its first N servers"
	default:
		return "this server has no Raft state and was started with none of -bootstrap-expect, -initial-cluster and -join, so it waits for a running cluster to add it; to start a cluster, give each of its first N servers -bootstrap-expect N and -join with the others' gossip addresses, or run one server alone with -dev"
	}
}
