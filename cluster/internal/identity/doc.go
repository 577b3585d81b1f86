// Package identity owns the data dir's identity file (ADR 0015): which
// server the data dir was made for and, once known, which cluster's state
// it holds. A server claims a new data dir at start and refuses one made
// for another server; files are written durably (WriteFileDurably), so a
// crash leaves the old file or the new one.
//
// It reads and writes that file only: it must never open Raft's stores,
// and what the data dir's Raft state says is checked against the file by
// the cluster package.
package identity
