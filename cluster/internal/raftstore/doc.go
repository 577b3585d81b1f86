// Package raftstore owns a server's Raft storage on disk and its
// integrity: it opens raft.db (the log and stable store) checked page by
// page, checks every log entry and the term and vote before Raft starts,
// seals the term and vote with a checksum (SealedStable), records the
// failed writes of the stores and snapshots (Health) for readiness, puts
// off the truncation of a conflicting suffix until its replacement is
// stored (DeferTruncation), and
// rewrites the configuration of a stopped server to recover it alone
// (Recover).
//
// Every damage it finds is an error wrapping identity.ErrRefusedStart
// that names the file and the remedy, never a panic. It must never repair, skip or
// rewrite a damaged entry, term or vote: a server that forgets its vote
// may vote twice in one term, and one that skips an entry serves a state
// its peers do not. It knows nothing of a running node: it takes the
// stores, the data dir and the node id, and Raft's own types.
package raftstore
