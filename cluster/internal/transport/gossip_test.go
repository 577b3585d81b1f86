package transport

import (
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/tenure-io/tenure/cluster/internal/connlimit"
)

// A gossip transport stops even while strangers keep connecting to it:
// a connection accepted just as Shutdown begins must not leave
// memberlist's accept loop waiting for a reader that has gone (a server's
// shutdown once hung there for the whole test timeout).
func TestGossipTransportStopsWhileConnectionsArrive(t *testing.T) {
	for round := range 20 {
		mc := memberlist.DefaultLANConfig()
		mc.Logger = log.New(io.Discard, "", 0)
		tr, err := NewGossipTransport("127.0.0.1", 0, connlimit.New(connlimit.Limits{Max: 256, PerClient: 32}), mc, nil)
		if err != nil {
			t.Fatal(err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", tr.GetAutoBindPort())
		stop := make(chan struct{})
		var dialers sync.WaitGroup
		for range 4 {
			dialers.Add(1)
			go func() {
				defer dialers.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
						c.Close()
					}
				}
			}()
		}
		time.Sleep(20 * time.Millisecond) // connections are arriving
		done := make(chan error, 1)
		go func() { done <- tr.Shutdown() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			close(stop)
			t.Fatalf("round %d: the transport's Shutdown did not return within 10s while connections arrived", round)
		}
		close(stop)
		dialers.Wait()
	}
}
