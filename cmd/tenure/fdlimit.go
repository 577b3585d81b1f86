package main

import (
	"flag"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/httpapi"
)

// fdReserve is the file descriptors kept beyond the ports' caps: the data
// files (raft.db, snapshots, logs), the outbound Raft and forwarding
// connections, gossip's UDP socket.
const fdReserve = 256

// connFlags registers the caps of the Raft and gossip ports.
func connFlags(fs *flag.FlagSet, l *cluster.ConnLimits) {
	fs.IntVar(&l.RaftMaxConns, "raft-max-conns", l.RaftMaxConns, "open inbound Raft connections; past it a new one is closed at once (the cluster's servers count only against the cap per address)")
	fs.IntVar(&l.RaftMaxConnsPerClient, "raft-max-conns-per-client", l.RaftMaxConnsPerClient, "open inbound Raft connections of one remote IP address")
	fs.IntVar(&l.GossipMaxConns, "gossip-max-conns", l.GossipMaxConns, "open inbound gossip (TCP) connections; past it a new one is closed at once")
	fs.IntVar(&l.GossipMaxConnsPerClient, "gossip-max-conns-per-client", l.GossipMaxConnsPerClient, "open inbound gossip (TCP) connections of one remote IP address")
	fs.DurationVar(&l.HandshakeTimeout, "raft-handshake-timeout", l.HandshakeTimeout, "an inbound Raft connection must finish its TLS handshake, or send its first bytes, within this")
}

// fdBudget checks that the caps of every port fit in the process's limit
// of open files (RLIMIT_NOFILE), with fdReserve to spare: a flood on one
// port must never take the descriptors another needs. When they do not
// fit and -http-max-conns was left at its default, it lowers the HTTP caps
// to fit and says so in warning; otherwise it refuses, naming the flags to
// lower and the limit to raise.
func fdBudget(s *serverSettings, limit uint64) (warning string, err error) {
	clusterFDs := s.cluster.Conns.FileDescriptors()
	need := uint64(s.http.FileDescriptors() + clusterFDs + fdReserve)
	if need <= limit {
		return "", nil
	}
	if s.http.MaxConns == httpapi.DefaultConnLimits(0).MaxConns && limit > uint64(clusterFDs+fdReserve) {
		avail := int(min(limit-uint64(clusterFDs+fdReserve), 1<<30))
		l := s.http
		for l.MaxConns = avail; l.MaxConns > 0 && l.FileDescriptors() > avail; {
			l.MaxConns -= max(1, (l.FileDescriptors()-avail)/2)
		}
		l.MaxConnsPerClient = min(l.MaxConnsPerClient, l.MaxConns)
		if l.MaxConns >= 64 {
			warning = fmt.Sprintf("the limit of open files (RLIMIT_NOFILE) is %d: -http-max-conns lowered from %d to %d, -http-max-conns-per-client to %d, to leave room for Raft, gossip and the data files; raise the limit (ulimit -n, LimitNOFILE= in systemd) to serve more",
				limit, s.http.MaxConns, l.MaxConns, l.MaxConnsPerClient)
			s.http = l
			return warning, nil
		}
	}
	return "", fmt.Errorf("open files: the connection caps need up to %d file descriptors (HTTP %d from -http-max-conns %d; Raft and gossip %d from -raft-max-conns, -raft-max-conns-per-client, -gossip-max-conns, -gossip-max-conns-per-client; %d for data files and outbound connections), but the limit of open files (RLIMIT_NOFILE) is %d: raise it (ulimit -n, LimitNOFILE= in systemd) or lower the caps",
		need, s.http.FileDescriptors(), s.http.MaxConns, clusterFDs, fdReserve, limit)
}

// checkOpenFiles applies fdBudget to this process's limit of open files.
func checkOpenFiles(s *serverSettings, log hclog.Logger) error {
	limit, err := openFileLimit()
	if err != nil {
		log.Warn("connection caps not checked against the limit of open files", "error", err)
		return nil
	}
	warning, err := fdBudget(s, limit)
	if warning != "" {
		log.Warn(warning)
	}
	return err
}
