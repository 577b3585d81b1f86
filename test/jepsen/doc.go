// Package jepsen is tenure's fault suite: it runs every server and every
// worker as a separate process of the real binaries, each in its own
// network namespace joined through a bridge in a hub namespace, injects
// faults (partitions, one-way cuts, delay and loss, a lagging leader, a
// leadership transfer its leader gave up on, pauses, crashes, leadership
// transfers, snapshot installs, clock drift), records what every process
// saw on CLOCK_MONOTONIC, and checks the histories: linearizability of the
// lease register, real-time mutual exclusion, fencing, leader election,
// placement, durability and recovery.
//
// TestJepsen runs it (as root; see docs/fault-suite.md). Packages:
// netns (namespaces and faults), history (the event record), check (the
// checkers), cmd/jagent (workers and the fenced store).
package jepsen
