package transport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/rounds"
)

// Where a server's HTTP address comes from (docs/adr/0026). Followers
// forward requests, with their tokens, to the leader's HTTP address, and
// clients follow it (the leader header): it must come from the server
// itself, not from whoever announces its id on gossip. So a node asks the
// server, over the server's Raft port at its address in the Raft
// configuration: a connection that starts with AddrMagic and addrVersion
// is answered with the server's node id and HTTP advertise address, and
// closed. With TLS the dial checks that the certificate names the id
// asked for, as Raft's own dials do; without TLS the answer is as good as
// the Raft configuration, which gossip can no longer move for a voter.
const (
	// AddrMagic is the first byte of an address question.
	AddrMagic   byte = 0xC8
	addrVersion byte = 1
	// maxHTTPAddrLen bounds the address an answer carries.
	maxHTTPAddrLen = 1024
)

// ErrAddrAnswer: a server's answer to an address question was not its
// own id and an address.
var ErrAddrAnswer = errors.New("server address answer")

// ServeAddr answers one address question on conn, whose hello (AddrMagic
// and version) has been read, with id and httpAddr.
func ServeAddr(conn net.Conn, version byte, id, httpAddr string, log hclog.Logger) {
	if version != addrVersion {
		log.Warn("address channel: unknown version", "from", conn.RemoteAddr(), "version", version)
		return
	}
	w := bufio.NewWriter(conn)
	conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if rounds.WriteServerID(w, raft.ServerID(id)) != nil || rounds.WriteServerID(w, raft.ServerID(httpAddr)) != nil {
		return
	}
	w.Flush()
}

// AskHTTPAddr asks server id at addr for its HTTP address.
func AskHTTPAddr(dial rounds.Dialer, id raft.ServerID, addr raft.ServerAddress, timeout time.Duration) (string, error) {
	conn, err := dial(id, addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte{AddrMagic, addrVersion}); err != nil {
		return "", err
	}
	r := bufio.NewReader(io.LimitReader(conn, 2*(2+maxHTTPAddrLen)))
	got, err := rounds.ReadServerID(r)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrAddrAnswer, err)
	}
	if got != id {
		return "", fmt.Errorf("%w: server %s at %s answered as %s", ErrAddrAnswer, id, addr, got)
	}
	http, err := rounds.ReadServerID(r)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrAddrAnswer, err)
	}
	if _, _, err := net.SplitHostPort(string(http)); err != nil || len(http) > maxHTTPAddrLen {
		return "", fmt.Errorf("%w: server %s gave HTTP address %q", ErrAddrAnswer, id, http)
	}
	return string(http), nil
}
