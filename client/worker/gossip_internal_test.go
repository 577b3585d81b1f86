package worker

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
)

// A worker given a fixed gossip port must announce that port, not
// memberlist's default: peers probe the announced one and would otherwise
// declare the worker dead.
func TestWorkerGossipAnnouncesItsOwnPort(t *testing.T) {
	seedCfg := memberlist.DefaultLANConfig()
	seedCfg.Name = "server-1"
	seedCfg.BindAddr, seedCfg.BindPort = "127.0.0.1", 0
	seedCfg.AdvertiseAddr = "127.0.0.1"
	seedCfg.LogOutput = hclog.NewNullLogger().StandardWriter(&hclog.StandardLoggerOptions{})
	seed, err := memberlist.Create(seedCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { seed.Shutdown() })

	l, err := net.Listen("tcp", "127.0.0.1:0") // a free port, not 7946
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	w := &Worker{group: "g", log: hclog.NewNullLogger(), cfg: workerConfig{
		id: "w1", holder: "w1#x", gossipAddr: fmt.Sprintf("127.0.0.1:%d", port),
		join: []string{seed.LocalNode().Address()},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := startWorkerGossip(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.list.Shutdown() })
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, n := range seed.Members() {
			if n.Name == "w1#x" {
				if int(n.Port) != port {
					t.Fatalf("the server sees the worker on port %d, want its gossip port %d", n.Port, port)
				}
				return
			}
		}
	}
	t.Fatalf("the server does not list the worker 5s after its join: %v", seed.Members())
}
