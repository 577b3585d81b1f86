// Package rounds holds what a server learns from its peers' answers: on the
// leader, whether it still leads (the leadership rounds of docs/adr/0002,
// batched by the Verifier and run by the Confirmer over the confirmation
// channel on the Raft port) and which followers answer its Raft RPCs
// (Contacts); on every server, how far it trails the leader's commit
// index (LagTracker). The voter's side of a round is Serve, with the
// Confirms rule. The transport wrapper of Wrap watches Raft's RPCs for
// the last two.
//
// A round is messages only: it must never write to the Raft log, and an
// answer counts only for the round it names, so that a renewal or a read
// confirmed by a round is confirmed by answers given after it began. The
// package decides nothing about leases, and its transport wrapper never
// changes an RPC it passes on; it only delays inbound ones until the hub
// opens them.
//
// Builds with the tag tenure_unsafe_rounds (a negative control of the
// fault suite, never a release) count answers of older rounds
// (unsafe_rounds_on.go).
package rounds
