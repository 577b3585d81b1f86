package transport

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/tenure-io/tenure/cluster/internal/connlimit"
)

// GossipTransport is memberlist's network transport with its inbound
// stream (TCP) connections within a connlimit.Gate: one past the caps is closed
// as soon as it is accepted. Memberlist closes every stream after its
// TCPTimeout, so an idle one holds its file descriptor for that long at
// most; the caps bound how many a flood can hold meanwhile.
type GossipTransport struct {
	*memberlist.NetTransport
	gate    *connlimit.Gate
	streams chan net.Conn
	// senders, when the server's gossip refuses plain streams, names
	// their senders (gossipsender.go); nil otherwise.
	senders *Senders
	timeout time.Duration
	// stop: Shutdown has begun; admit closes what it receives from then
	// on. done: memberlist's transport has stopped accepting, so admit
	// may stop reading from it.
	stop, done chan struct{}
	once       sync.Once
	wg         sync.WaitGroup
}

// NewGossipTransport listens for gossip on host:port (port 0 picks one),
// its inbound streams within gate. When mc's gossip is encrypted and
// refuses plain messages, senders (if not nil) learns who sent each plain
// stream that memberlist will refuse.
func NewGossipTransport(host string, port int, gate *connlimit.Gate, mc *memberlist.Config, senders *Senders) (*GossipTransport, error) {
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{host}, BindPort: port, Logger: mc.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("gossip listen on %s: %w", net.JoinHostPort(host, fmt.Sprint(port)), err)
	}
	t := &GossipTransport{
		NetTransport: nt,
		gate:         gate,
		streams:      make(chan net.Conn),
		stop:         make(chan struct{}),
		done:         make(chan struct{}),
		timeout:      mc.TCPTimeout,
	}
	if mc.Keyring != nil && mc.GossipVerifyIncoming {
		t.senders = senders
	}
	t.wg.Add(1)
	go t.admit()
	return t, nil
}

// admit hands on the connections within the caps until Shutdown, and
// closes those that arrive during it. It reads memberlist's transport
// until that has stopped accepting (done): its accept loop blocks on
// handing over a connection, and its Shutdown waits for that loop, so a
// connection accepted just as Shutdown began would hang it forever.
func (t *GossipTransport) admit() {
	defer t.wg.Done()
	for {
		select {
		case <-t.done:
			return
		case c := <-t.NetTransport.StreamCh():
			select {
			case <-t.stop:
				c.Close()
				continue
			default:
			}
			gc, ok := t.gate.Admit(c)
			if !ok {
				c.Close()
				continue
			}
			if t.senders == nil {
				t.handOn(gc)
				continue
			}
			// Reading ahead waits for the sender: not in this loop.
			t.wg.Add(1)
			go func() {
				defer t.wg.Done()
				t.handOn(t.senders.peekSender(gc, t.timeout))
			}()
		}
	}
}

// handOn gives memberlist c, or closes it once Shutdown has begun.
func (t *GossipTransport) handOn(c net.Conn) {
	select {
	case t.streams <- c:
	case <-t.stop:
		c.Close()
	}
}

// StreamCh implements memberlist.Transport: the admitted connections.
func (t *GossipTransport) StreamCh() <-chan net.Conn { return t.streams }

// Shutdown implements memberlist.Transport.
func (t *GossipTransport) Shutdown() error {
	var err error
	t.once.Do(func() {
		close(t.stop)
		err = t.NetTransport.Shutdown()
		close(t.done)
		t.wg.Wait()
	})
	return err
}
