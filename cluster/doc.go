// Package cluster runs one tenure server node: Raft with its bolt stores and
// transport, the leader-only lessor that keeps lease deadlines on the
// monotonic clock, the proposer that batches writes into shared log entries
// and hands freed keys to waiters, the batched leadership check that serves
// renewals and linearizable reads, and memberlist gossip for discovery,
// bootstrap and joins.
//
// docs/request-paths.md follows each request through this package: which
// goroutine owns what, where it waits, and what each failure returns.
//
// The package owns every decision that involves time; package fsm stays
// deterministic. It never serves HTTP: package httpapi does that on top of
// Node's methods. It is internal to tenure; the stable public API is package
// client.
package cluster
