// Package loglimit bounds the log lines that people outside the cluster
// can cause (refused requests, failed handshakes, gossip packets without
// the key): per reason, the first lines of each interval are logged and the
// rest only counted, and one summary per interval says how many were left
// out. The API server's refusal log and a server's gossip and Raft
// transport logs use it.
//
// It uses only the standard library, never logs itself and keeps no state
// beyond its counts. It is internal to tenure; the stable public API is
// package client.
package loglimit
