package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// Where a server's HTTP address comes from (docs/adr/0026). Followers
// forward requests, with their tokens, to the leader's HTTP address, and
// clients follow it (the leader header): it must come from the server
// itself, not from whoever announces its id on gossip. So a node asks the
// server, over the server's Raft port at its address in the Raft
// configuration: a connection that starts with addrMagic and addrVersion
// is answered with the server's node id and HTTP advertise address, and
// closed. With TLS the dial checks that the certificate names the id
// asked for, as Raft's own dials do; without TLS the answer is as good as
// the Raft configuration, which gossip can no longer move for a voter.
const (
	addrMagic   byte = 0xC8
	addrVersion byte = 1
	// maxHTTPAddrLen bounds the address an answer carries.
	maxHTTPAddrLen = 1024
)

var errAddrAnswer = errors.New("server address answer")

// serveAddr answers one address question on conn, whose hello (magic and
// version) has been read.
func (n *Node) serveAddr(conn net.Conn, version byte) {
	if version != addrVersion {
		n.log.Warn("address channel: unknown version", "from", conn.RemoteAddr(), "version", version)
		return
	}
	w := bufio.NewWriter(conn)
	conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if writeServerID(w, raft.ServerID(n.cfg.NodeID)) != nil || writeServerID(w, raft.ServerID(n.cfg.HTTPAddr)) != nil {
		return
	}
	w.Flush()
}

// askHTTPAddr asks server id at addr for its HTTP address.
func askHTTPAddr(dial confirmDialer, id raft.ServerID, addr raft.ServerAddress, timeout time.Duration) (string, error) {
	conn, err := dial(id, addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte{addrMagic, addrVersion}); err != nil {
		return "", err
	}
	r := bufio.NewReader(io.LimitReader(conn, 2*(2+maxHTTPAddrLen)))
	got, err := readServerID(r)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errAddrAnswer, err)
	}
	if got != id {
		return "", fmt.Errorf("%w: server %s at %s answered as %s", errAddrAnswer, id, addr, got)
	}
	http, err := readServerID(r)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errAddrAnswer, err)
	}
	if _, _, err := net.SplitHostPort(string(http)); err != nil || len(http) > maxHTTPAddrLen {
		return "", fmt.Errorf("%w: server %s gave HTTP address %q", errAddrAnswer, id, http)
	}
	return string(http), nil
}
