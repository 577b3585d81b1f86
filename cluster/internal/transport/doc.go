// Package transport is the network layer under a server's Raft and gossip:
// Raft's stream layer over TCP or mutual TLS (with every dial bound to the
// server id it is for), the side channels that share the Raft port, the
// guard that keeps Raft's pipelined replication from stalling, the gossip
// transport with its streams within a connlimit.Gate (naming, for the log,
// the senders of plain streams that encrypted gossip refuses: Senders),
// and the cache of the HTTP addresses that servers give over their Raft
// port.
//
// It moves bytes and checks who is at the other end; it must never read or
// decide anything about leases, the Raft configuration or the state
// machine. What it needs of the server (which addresses are trusted,
// where side-channel connections go, whether ids are checked) is passed
// in by the cluster package.
package transport
