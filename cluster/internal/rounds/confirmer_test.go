package rounds

import (
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// The leader keeps a connection only to the voters of the current
// configuration: one removed, or moved to another address, is dropped at
// the next round instead of being kept (and redialled) for ever.
func TestConfirmerDropsPeersThatLeftTheConfiguration(t *testing.T) {
	var mu sync.Mutex
	dialled := map[raft.ServerAddress]int{}
	var ends []net.Conn
	dial := func(_ raft.ServerID, addr raft.ServerAddress, _ time.Duration) (net.Conn, error) {
		a, b := net.Pipe()
		mu.Lock()
		dialled[addr]++
		ends = append(ends, b)
		mu.Unlock()
		go func() { // a voter that reads and never answers
			buf := make([]byte, 512)
			for {
				if _, err := b.Read(buf); err != nil {
					return
				}
			}
		}()
		return a, nil
	}
	c := NewConfirmer("self", dial, 20*time.Millisecond, errors.New("closed"), hclog.NewNullLogger())
	defer c.Close()
	conf := func(addrs ...raft.ServerAddress) raft.Configuration {
		cf := raft.Configuration{Servers: []raft.Server{{ID: "self", Address: "self:1", Suffrage: raft.Voter}}}
		for i, a := range addrs {
			cf.Servers = append(cf.Servers, raft.Server{ID: raft.ServerID(rune('a' + i)), Address: a, Suffrage: raft.Voter})
		}
		return cf
	}
	peers := func() []raft.ServerAddress {
		c.mu.Lock()
		defer c.mu.Unlock()
		var out []raft.ServerAddress
		for a := range c.peers {
			out = append(out, a)
		}
		slices.Sort(out)
		return out
	}
	if err := c.Confirm(1, conf("a:1", "b:1")); err == nil {
		t.Fatal("a round that no voter answered succeeded")
	}
	if got := peers(); !slices.Equal(got, []raft.ServerAddress{"a:1", "b:1"}) {
		t.Fatalf("peers after the first round: %v, want [a:1 b:1]", got)
	}
	// b moved to another address.
	c.Confirm(1, conf("a:1", "b:2"))
	if got := peers(); !slices.Equal(got, []raft.ServerAddress{"a:1", "b:2"}) {
		t.Fatalf("peers after b moved: %v, want [a:1 b:2]", got)
	}
	// b removed.
	c.Confirm(1, conf("a:1"))
	if got := peers(); !slices.Equal(got, []raft.ServerAddress{"a:1"}) {
		t.Fatalf("peers after b was removed: %v, want [a:1]", got)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, e := range ends {
		e.Close()
	}
}
