package inproc

import (
	"io"
	"net"
	"strconv"
	"testing"

	"github.com/hashicorp/memberlist"
	"github.com/tenure-io/tenure/test/harness"
)

// MetaDelegate is a memberlist delegate that announces itself as its
// metadata and ignores everything else: a gossip member with no server
// behind it, which says what a test wants it to say.
type MetaDelegate []byte

func (d MetaDelegate) NodeMeta(int) []byte           { return d }
func (MetaDelegate) NotifyMsg([]byte)                {}
func (MetaDelegate) GetBroadcasts(int, int) [][]byte { return nil }
func (MetaDelegate) LocalState(bool) []byte          { return nil }
func (MetaDelegate) MergeRemoteState([]byte, bool)   {}

// Forge joins the gossip at join with a member named name, on a free
// loopback port, that announces meta; the member leaves when t ends.
func Forge(t testing.TB, name string, meta []byte, join string) {
	t.Helper()
	host, port, _ := net.SplitHostPort(harness.FreeAddr(t))
	mc := memberlist.DefaultLANConfig()
	mc.Name = name
	mc.BindAddr, mc.AdvertiseAddr = host, host
	mc.BindPort, _ = strconv.Atoi(port)
	mc.AdvertisePort = mc.BindPort
	mc.Delegate = MetaDelegate(meta)
	mc.LogOutput = io.Discard
	list, err := memberlist.Create(mc)
	if err != nil {
		t.Fatalf("forged member %s: %v", name, err)
	}
	t.Cleanup(func() { list.Shutdown() })
	if _, err := list.Join([]string{join}); err != nil {
		t.Fatalf("forged member %s joins %s: %v", name, join, err)
	}
}
