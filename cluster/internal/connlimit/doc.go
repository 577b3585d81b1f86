// Package connlimit caps the inbound connections of a server's ports
// (Raft, gossip, HTTP): in all and per remote IP address, with the
// servers of the cluster either kept room for or let past the total, and
// a deadline for a connection's first bytes. One Gate counts one port;
// Listener closes a connection past its caps as soon as it is accepted,
// and a server that answers instead (HTTP's 503) uses Gate.Enter and
// Gate.Leave itself.
//
// It counts and closes connections; it must never read them, log, or
// know what protocol they carry. Flags and their checks belong to the
// packages that own the ports (cluster.ConnLimits, httpapi.ConnLimits).
package connlimit
