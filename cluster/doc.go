// Package cluster runs one tenure server node. It is the hub: the node's
// life (New, Shutdown), the leader loop that follows Raft's NotifyCh, the
// proposer that batches writes into shared log entries and hands freed
// keys to waiters, the forgetting of free key records (retention.go), the
// write path (apply.go: the one raft.Apply; raftfsm.go: the raft.FSM
// adapter over fsm.Machine), and the methods the HTTP API calls. Its parts
// stand alone under cluster/internal, each with one job:
//
//   - lessor: lease deadlines on the leader's monotonic clock; clock: the
//     injected time source it shares with placement and retention;
//   - rounds: the leadership rounds that serve renewals and linearizable
//     reads, and what the leader hears from its followers;
//   - transport: Raft's stream layer (TCP or mutual TLS, ids checked on
//     every dial), the side channels of the Raft port, the gossip transport;
//   - raftstore: raft.db opened and checked, the sealed stable store,
//     recovery of a lone server;
//   - membership: gossip, the keyring, and the autopilot that admits,
//     promotes and removes servers behind the identity proof;
//   - placement: the planner, the balancer and the stuck-worker tracker;
//   - views: what an operator reads of groups and workers; events: the
//     log lines of lease events;
//   - acl: who may do what; check: the rules of a request's fields;
//     nodeconfig: the node's configuration and its checks;
//   - backup: backup files, schedule, restore policy; identity: the data
//     dir's identity file; metrics: the Prometheus side;
//   - limitedlog: loggers strangers cannot flood; connlimit: the caps on
//     inbound connections of every port; certs: certificates and TLS
//     configurations.
//
// docs/request-paths.md follows each request through this package: which
// goroutine owns what, where it waits, and what each failure returns.
//
// The package owns every decision that involves time; package fsm stays
// deterministic. It never serves HTTP: package httpapi does that on top of
// Node's methods. It is internal to tenure; the stable public API is the
// client module (github.com/tenure-io/tenure/client).
package cluster
