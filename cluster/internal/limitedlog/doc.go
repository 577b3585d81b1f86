// Package limitedlog makes the loggers of the parts of a server that
// strangers can make log a line at will: memberlist's (a gossip packet
// without the key) and the Raft transport's (a connection that sends no
// Raft RPC). Their lines are limited per kind with a Limiter, and one
// log_lines_suppressed line per kind and interval counts the rest.
// memberlist's lines about gossip it refused also get the member that
// sent it, when the server can tell (MemberlistLogger). The Limiter also
// bounds the HTTP API's refusal log (cluster.LogLimiter): per reason, the
// first lines of each interval are logged and the rest only counted.
//
// It only wraps the loggers it is given, and keeps no state beyond its
// counts. Lines below a logger's level are not counted (hclog drops them
// anyway), and a flood of one kind must never hold back the lines of
// another.
package limitedlog
