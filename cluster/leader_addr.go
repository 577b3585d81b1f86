package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
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

// httpAddrTTL is how long a learned address is used before it is asked
// again (in the background, the old one served meanwhile);
// httpAddrRetry spaces the questions to a server that did not answer.
const (
	httpAddrTTL   = 30 * time.Second
	httpAddrRetry = time.Second
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

// httpAddrs caches the HTTP addresses that servers gave, each bound to the
// id and Raft address it was asked at.
type httpAddrs struct {
	ask func(raft.ServerID, raft.ServerAddress) (string, error)

	mu      sync.Mutex
	entries map[raft.ServerID]*httpAddrEntry
	// changed, if not nil, is called after an answer changed an address.
	changed func()
}

type httpAddrEntry struct {
	raftAddr raft.ServerAddress
	http     string    // "" until an answer came
	at       time.Time // of the last question
	asking   bool
	ready    chan struct{} // closed when the question in flight ends
}

func newHTTPAddrs(ask func(raft.ServerID, raft.ServerAddress) (string, error)) *httpAddrs {
	return &httpAddrs{ask: ask, entries: map[raft.ServerID]*httpAddrEntry{}}
}

// get returns the HTTP address that server id, at raftAddr, gave, and
// asks it (again) in the background when it has none, or an old one: it
// never blocks. "" until the server has answered.
func (h *httpAddrs) get(id raft.ServerID, raftAddr raft.ServerAddress) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.entries[id]
	if e == nil || e.raftAddr != raftAddr {
		// Another address is another server as far as this cache
		// knows: nothing it said before counts.
		e = &httpAddrEntry{raftAddr: raftAddr}
		h.entries[id] = e
		if len(h.entries) > 1024 { // bounded: ids come from the configuration
			clear(h.entries)
			h.entries[id] = e
		}
	}
	wait := httpAddrTTL
	if e.http == "" {
		wait = httpAddrRetry
	}
	if !e.asking && time.Since(e.at) >= wait {
		h.startLocked(id, e)
	}
	return e.http
}

// wait returns the address as get does, but when there is none yet it
// waits for the question in flight, until ctx ends.
func (h *httpAddrs) wait(ctx context.Context, id raft.ServerID, raftAddr raft.ServerAddress) string {
	if a := h.get(id, raftAddr); a != "" {
		return a
	}
	h.mu.Lock()
	e := h.entries[id]
	var ready chan struct{}
	if e != nil && e.raftAddr == raftAddr && e.asking {
		ready = e.ready
	}
	h.mu.Unlock()
	if ready == nil {
		return ""
	}
	select {
	case <-ready:
	case <-ctx.Done():
		return ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.entries[id]; e != nil && e.raftAddr == raftAddr {
		return e.http
	}
	return ""
}

func (h *httpAddrs) startLocked(id raft.ServerID, e *httpAddrEntry) {
	e.asking, e.at, e.ready = true, time.Now(), make(chan struct{})
	go func() {
		addr, err := h.ask(id, e.raftAddr)
		h.mu.Lock()
		changed := false
		if err == nil && h.entries[id] == e {
			changed = e.http != addr
			e.http = addr
		}
		e.asking = false
		close(e.ready)
		notify := h.changed
		h.mu.Unlock()
		if changed && notify != nil {
			notify()
		}
	}()
}
