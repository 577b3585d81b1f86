package transport

import (
	"errors"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// muxStream is Raft's stream layer with the server's side channels (the
// confirmation channel, the address channel) on the same port: an
// accepted connection whose first byte is one of channels goes to serve,
// any other to Raft with that byte read again. Both go through
// the port's connection caps, handshake deadline and, with TLS, mutual
// authentication as servers of the cluster: the layer below did that.
type muxStream struct {
	raft.StreamLayer
	serve    func(net.Conn)
	channels []byte

	conns  chan net.Conn
	done   chan struct{}
	once   sync.Once
	closed error
}

var errStreamClosed = errors.New("raft stream closed")

func newMuxStream(inner raft.StreamLayer, serve func(net.Conn), channels []byte) *muxStream {
	m := &muxStream{StreamLayer: inner, serve: serve, channels: channels, conns: make(chan net.Conn), done: make(chan struct{})}
	go m.accept()
	return m
}

func (m *muxStream) accept() {
	for {
		c, err := m.StreamLayer.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				m.Close()
				return
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		go m.route(c)
	}
}

// route reads the first byte (within the listener's handshake deadline)
// and hands c on.
func (m *muxStream) route(c net.Conn) {
	var first [1]byte
	if _, err := c.Read(first[:]); err != nil {
		c.Close()
		return
	}
	pc := &prefixConn{Conn: c, first: first[0], pending: true}
	if slices.Contains(m.channels, first[0]) {
		m.serve(pc)
		return
	}
	select {
	case m.conns <- pc:
	case <-m.done:
		c.Close()
	}
}

// Accept implements net.Listener for Raft: its connections only.
func (m *muxStream) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case <-m.done:
		return nil, errStreamClosed
	}
}

// Close implements net.Listener.
func (m *muxStream) Close() error {
	m.once.Do(func() {
		close(m.done)
		m.closed = m.StreamLayer.Close()
	})
	return m.closed
}

// prefixConn gives back the first byte that routing read.
type prefixConn struct {
	net.Conn
	first   byte
	pending bool
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if c.pending && len(p) > 0 {
		p[0], c.pending = c.first, false
		return 1, nil
	}
	return c.Conn.Read(p)
}
