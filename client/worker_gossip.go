package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
)

// workerMeta is what a worker announces over gossip. The JSON names are a
// contract with the servers (their MemberMeta).
type workerMeta struct {
	Role     string   `json:"role"`
	ID       string   `json:"id"`
	Groups   []string `json:"groups"`
	Capacity int      `json:"capacity,omitempty"`
	Draining bool     `json:"draining,omitempty"`
}

// workerGossip is a worker's memberlist membership.
type workerGossip struct {
	list *memberlist.Memberlist
	log  hclog.Logger

	mu   sync.Mutex
	meta workerMeta
}

// startWorkerGossip joins the cluster's gossip as a worker of w's group,
// retrying the join until it succeeds or ctx ends.
func startWorkerGossip(ctx context.Context, w *Worker) (*workerGossip, error) {
	host, portStr, err := net.SplitHostPort(w.cfg.gossipAddr)
	if err != nil {
		return nil, fmt.Errorf("%w: gossip address %q: %v", ErrInvalid, w.cfg.gossipAddr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("%w: gossip port %q: %v", ErrInvalid, portStr, err)
	}
	g := &workerGossip{
		log:  w.log.Named("gossip"),
		meta: workerMeta{Role: "worker", ID: w.cfg.id, Groups: []string{w.group}, Capacity: w.cfg.capacity},
	}
	mc := memberlist.DefaultLANConfig()
	mc.Name = w.cfg.id
	mc.BindAddr, mc.BindPort = host, port
	mc.AdvertiseAddr = host
	mc.Delegate = g
	mc.Logger = g.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	g.list, err = memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("start worker gossip on %s: %w", w.cfg.gossipAddr, err)
	}
	for {
		peers := w.cfg.join
		if len(peers) == 0 {
			peers = w.serverGossipAddrs(ctx)
		}
		if len(peers) > 0 {
			if n, err := g.list.Join(peers); n > 0 {
				g.log.Debug("joined", "peers", n)
				return g, nil
			} else if err != nil {
				g.log.Debug("join failed", "error", err)
			}
		}
		if err := sleepCtx(ctx, w.cfg.retry); err != nil {
			g.list.Shutdown()
			return nil, err
		}
	}
}

// serverGossipAddrs asks the cluster for its servers' gossip addresses.
func (w *Worker) serverGossipAddrs(ctx context.Context) []string {
	members, _, err := w.c.Members(ctx)
	if err != nil {
		w.log.Debug("listing members failed", "error", err)
		return nil
	}
	var out []string
	for _, m := range members {
		if m.Role == "server" && m.Status == "alive" {
			out = append(out, m.Addr)
		}
	}
	return out
}

// setDraining announces (or withdraws) that the worker is draining.
func (g *workerGossip) setDraining(draining bool) error {
	g.mu.Lock()
	g.meta.Draining = draining
	g.mu.Unlock()
	if err := g.list.UpdateNode(5 * time.Second); err != nil {
		return fmt.Errorf("announce draining: %w", err)
	}
	return nil
}

// leave tells the others this worker is gone, then stops gossip.
func (g *workerGossip) leave() {
	if err := g.list.Leave(2 * time.Second); err != nil {
		g.log.Debug("leave failed", "error", err)
	}
	g.list.Shutdown()
}

// NodeMeta implements memberlist.Delegate.
func (g *workerGossip) NodeMeta(limit int) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, err := json.Marshal(g.meta)
	if err != nil || len(b) > limit {
		g.log.Error("worker metadata too large", "bytes", len(b), "limit", limit)
		return nil
	}
	return b
}

// The rest of memberlist.Delegate: workers gossip nothing but metadata.
func (g *workerGossip) NotifyMsg([]byte)                           {}
func (g *workerGossip) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (g *workerGossip) LocalState(join bool) []byte                { return nil }
func (g *workerGossip) MergeRemoteState(buf []byte, join bool)     {}
