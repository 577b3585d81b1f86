package cluster

import (
	"bufio"
	"io"
	"net"

	"github.com/hashicorp/raft"

	"github.com/tenure-io/tenure/cluster/internal/rounds"
	"github.com/tenure-io/tenure/cluster/internal/transport"
)

// ServeConfirm answers a leader's confirmation requests on conn (the voter's
// side of the leadership check, docs/adr/0002) until conn fails, then
// closes it. conn starts with rounds.Magic and rounds.Version. The Raft
// port hands such connections here (transport.New); tests that connect
// nodes in memory call it with one end of a pipe.
func (n *Node) ServeConfirm(conn net.Conn) {
	if !n.inbound.Add(conn) {
		conn.Close()
		return
	}
	defer n.inbound.Remove(conn)
	defer conn.Close()
	r := bufio.NewReader(conn)
	var hello [2]byte
	if _, err := io.ReadFull(r, hello[:]); err != nil {
		return
	}
	if hello[0] == transport.AddrMagic {
		transport.ServeAddr(conn, hello[1], n.cfg.NodeID, n.cfg.HTTPAddr, n.log)
		return
	}
	if hello[0] != rounds.Magic || hello[1] != rounds.Version {
		n.log.Warn("confirmation channel: unknown protocol", "from", conn.RemoteAddr(), "magic", hello[0], "version", hello[1])
		return
	}
	ready := func() rounds.RaftState {
		if r := n.raftReady.Load(); r != nil { // nil until the cluster-id check has passed
			return r
		}
		return nil
	}
	voter := rounds.Voter{ID: raft.ServerID(n.cfg.NodeID), Raft: ready, Stopped: n.shutdownCh}
	rounds.Serve(conn, r, voter.Answer, n.log)
}
