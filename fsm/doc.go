// Package fsm is tenure's replicated lease state machine: the commands that
// travel through the Raft log, their binary encoding, and Machine, which
// applies them and snapshots the result.
//
// The package owns the lease table, the fencing-token counter, the term of
// the last established leader, the placement state, and the ACL state:
// policies, tokens (their secrets' hashes only, never a secret) and worker
// registrations. Secrets and accessor ids are random, so the server makes
// them and passes them in; evaluating rights is package cluster's. It must stay deterministic: no clock, no
// randomness, no I/O beyond the snapshot streams that Raft hands it, and no
// dependence on map iteration order. Everything that involves time (lease
// deadlines, expiry) lives in the leader's lessor in package cluster, which
// turns a passed deadline into an Expire command.
//
// Machine also records an Event for every change it applies, in a bounded
// in-memory history (events.go): the same events at the same index on
// every replica, since they depend on the log alone.
//
// docs/request-paths.md follows each request through the cluster down to
// Machine.Apply and back.
//
// This package is internal to tenure; its API may change at any time. The
// stable public API is package client.
package fsm
