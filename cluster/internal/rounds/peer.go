package rounds

import (
	"bufio"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// confirmQueue bounds the requests waiting for one peer's connection; past
// it a request is dropped (its round counts on the other voters, or fails).
const confirmQueue = 256

// redialAfter spaces the dials to a peer that did not answer the last one.
const redialAfter = 50 * time.Millisecond

// confirmPeer keeps one connection to a peer's confirmation channel: a
// writer goroutine that dials when it has no connection and writes the
// queued requests, and a reader per connection that hands the answers to
// the Confirmer. The connection stays open between rounds (TCP keep-alive).
type confirmPeer struct {
	c    *Confirmer
	id   raft.ServerID
	addr raft.ServerAddress
	reqs chan Request
	stop chan struct{}
	once sync.Once
}

func newConfirmPeer(c *Confirmer, id raft.ServerID, addr raft.ServerAddress) *confirmPeer {
	p := &confirmPeer{c: c, id: id, addr: addr, reqs: make(chan Request, confirmQueue), stop: make(chan struct{})}
	go p.write()
	return p
}

// send queues req without blocking.
func (p *confirmPeer) send(req Request) {
	select {
	case p.reqs <- req:
	default:
		p.c.log.Debug("confirmation queue full; request dropped", "peer", p.addr, "round", req.Round)
	}
}

func (p *confirmPeer) close() { p.once.Do(func() { close(p.stop) }) }

func (p *confirmPeer) write() {
	var (
		conn       net.Conn
		w          *bufio.Writer
		lastFailed time.Time
	)
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	batch := make([]Request, 0, 16)
	for {
		batch = batch[:0]
		select {
		case <-p.stop:
			return
		case req := <-p.reqs:
			batch = append(batch, req)
		}
		// Take every request already queued: one write, one flush.
		for more := true; more; {
			select {
			case r := <-p.reqs:
				batch = append(batch, r)
			default:
				more = false
			}
		}
		// A connection that failed since its last use is seen only when
		// written to: then dial again at once, once.
		for attempt := 0; attempt < 2; attempt++ {
			fresh := conn == nil
			if fresh {
				if time.Since(lastFailed) < redialAfter {
					break // the peer is down: these rounds count on the others
				}
				var err error
				if conn, err = p.dial(); err != nil {
					p.c.log.Debug("confirmation channel: dial failed", "peer", p.addr, "error", err)
					lastFailed = time.Now()
					break
				}
				w = bufio.NewWriter(conn)
				go p.read(conn)
			}
			if err := p.writeBatch(conn, w, batch); err == nil {
				break
			} else {
				p.c.log.Debug("confirmation channel: write failed", "peer", p.addr, "error", err)
			}
			conn.Close()
			conn = nil
			if fresh {
				lastFailed = time.Now()
				break
			}
		}
	}
}

func (p *confirmPeer) writeBatch(conn net.Conn, w *bufio.Writer, batch []Request) error {
	if err := conn.SetWriteDeadline(time.Now().Add(p.c.timeout)); err != nil {
		return err
	}
	for _, r := range batch {
		if err := writeRequest(w, r); err != nil {
			return err
		}
	}
	return w.Flush()
}

func (p *confirmPeer) dial() (net.Conn, error) {
	conn, err := p.c.dial(p.id, p.addr, p.c.timeout)
	if err != nil {
		return nil, err
	}
	conn.SetWriteDeadline(time.Now().Add(p.c.timeout))
	if _, err := conn.Write([]byte{Magic, Version}); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// read hands every answer on conn to the Confirmer until conn fails; it
// closes conn so that the writer dials again.
func (p *confirmPeer) read(conn net.Conn) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	for {
		a, err := readAnswer(r)
		if err != nil {
			return
		}
		p.c.deliver(p.addr, a)
	}
}
