package transport

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/connlimit"
	"github.com/tenure-io/tenure/cluster/internal/nodeconfig"
)

func TestSplitPeerAddress(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       raft.ServerAddress
		id       raft.ServerID
		addr     raft.ServerAddress
		namesOne bool
	}{
		{"id and address", peerAddress("n1", "10.0.0.1:7501"), "n1", "10.0.0.1:7501", true},
		{"address only", "10.0.0.1:7501", "", "10.0.0.1:7501", false},
		{"empty id", "@10.0.0.1:7501", "", "@10.0.0.1:7501", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, addr, ok := splitPeerAddress(tc.in)
			if id != tc.id || addr != tc.addr || ok != tc.namesOne {
				t.Fatalf("splitPeerAddress(%q) = %q, %q, %v; want %q, %q, %v", tc.in, id, addr, ok, tc.id, tc.addr, tc.namesOne)
			}
		})
	}
}

// A connection that starts with a side channel's byte goes to serve, any
// other to Raft, with its first byte read again in both cases.
func TestMuxRoutesSideChannels(t *testing.T) {
	stream, err := newStream(Config{Node: nodeconfig.Config{RaftAddr: "127.0.0.1:0", Conns: nodeconfig.ConnLimits{HandshakeTimeout: 5 * time.Second}}},
		connlimit.New(connlimit.Limits{Max: 8, PerClient: 8}))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan net.Conn, 1)
	m := newMuxStream(stream, func(c net.Conn) { served <- c }, []byte{0xC8})
	t.Cleanup(func() { m.Close() })
	first := func(t *testing.T, c net.Conn) byte {
		t.Helper()
		defer c.Close()
		var b [2]byte
		if _, err := io.ReadFull(c, b[:]); err != nil {
			t.Fatal(err)
		}
		return b[0]
	}
	for _, tc := range []struct {
		name    string
		first   byte
		toServe bool
	}{
		{"side channel", 0xC8, true},
		{"raft", 0x01, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := stream.Dial(raft.ServerAddress(stream.Listener.Addr().String()), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write([]byte{tc.first, 0}); err != nil {
				t.Fatal(err)
			}
			var got net.Conn
			if tc.toServe {
				select {
				case got = <-served:
				case <-time.After(5 * time.Second):
					t.Fatal("the side channel's connection did not reach serve")
				}
			} else if got, err = m.Accept(); err != nil {
				t.Fatal(err)
			}
			if b := first(t, got); b != tc.first {
				t.Fatalf("first byte %#x, want %#x", b, tc.first)
			}
		})
	}
}

// pipeline is an AppendPipeline whose answers the test sends.
type pipeline struct {
	raft.AppendPipeline
	ch chan raft.AppendFuture
}

func (p *pipeline) Consumer() <-chan raft.AppendFuture { return p.ch }
func (p *pipeline) Close() error                       { return nil }

type future struct {
	raft.AppendFuture
	req  *raft.AppendEntriesRequest
	resp *raft.AppendEntriesResponse
}

func (f future) Request() *raft.AppendEntriesRequest   { return f.req }
func (f future) Response() *raft.AppendEntriesResponse { return f.resp }

// The guard passes answers on until one that ends raft's decoder, then
// keeps reading (and dropping) the rest, so the transport never blocks.
func TestGuardPipelineKeepsReading(t *testing.T) {
	inner := &pipeline{ch: make(chan raft.AppendFuture)}
	g := GuardPipeline(inner)
	defer g.Close()
	send := func(f raft.AppendFuture) {
		t.Helper()
		select {
		case inner.ch <- f:
		case <-time.After(5 * time.Second):
			t.Fatal("the guard stopped reading the pipeline's answers")
		}
	}
	ok := future{req: &raft.AppendEntriesRequest{Term: 2}, resp: &raft.AppendEntriesResponse{Term: 2, Success: true}}
	refused := future{req: &raft.AppendEntriesRequest{Term: 2}, resp: &raft.AppendEntriesResponse{Term: 2}}
	for _, f := range []future{ok, refused} {
		send(f)
		if got := <-g.Consumer(); got.Response() != f.resp {
			t.Fatalf("got answer %+v, want %+v", got.Response(), f.resp)
		}
	}
	for range 3 { // nobody reads these: the decoder has returned
		send(ok)
	}
}
