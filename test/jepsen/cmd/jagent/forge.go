package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/worker"
	"github.com/tenure-io/tenure/test/jepsen/history"
)

// forgeFlags are the flags of `jagent forge`.
type forgeFlags struct {
	historyPath, name, logLevel string
	gossip, join                string
	id, cluster                 string
	expect                      int
	raftAddr, raftTo            string
	httpAddr, httpTo            string
	duration                    time.Duration
}

// runForge is `jagent forge`: the fault suite's adversary. It holds what a
// worker holds (the gossip key, from TENURE_GOSSIP_KEY) and nothing of a
// server's, and it lies: it joins gossip announcing itself as server -id
// of cluster -cluster, at a Raft address and an HTTP address of its own.
// Each of them is a plain TCP relay to -raft-to and -http-to (a real
// server's ports), so a TLS handshake through it reaches a real server's
// certificate: the relay attack of a voter's slot and of forwarded
// requests. Every connection it accepts is recorded in the history as a
// Forged event (F: raft or http), so the suite can tell what reached it.
func runForge(ctx context.Context, args []string, stderr io.Writer) int {
	var f forgeFlags
	fs := newFlagSet("forge", "-gossip-addr IP:PORT -join IP:PORT,... -id ID -history FILE [-cluster NAME] [-expect N] [-raft-addr IP:PORT -raft-to IP:PORT] [-http-addr IP:PORT -http-to IP:PORT]", stderr)
	fs.StringVar(&f.historyPath, "history", "", "history file to append events to (required)")
	fs.StringVar(&f.name, "name", "forge", "process name")
	fs.StringVar(&f.logLevel, "log-level", "info", "level of the log on stderr")
	fs.StringVar(&f.gossip, "gossip-addr", "", "gossip address to bind and announce, IP:PORT (required)")
	fs.StringVar(&f.join, "join", "", "comma-separated gossip addresses of servers to join (required)")
	fs.StringVar(&f.id, "id", "", "the server id to announce (required)")
	fs.StringVar(&f.cluster, "cluster", "tenure", "the cluster name to announce")
	fs.IntVar(&f.expect, "expect", 0, "the bootstrap-expect to announce")
	fs.StringVar(&f.raftAddr, "raft-addr", "", "Raft address to announce and listen on, IP:PORT")
	fs.StringVar(&f.raftTo, "raft-to", "", "where connections to -raft-addr are relayed")
	fs.StringVar(&f.httpAddr, "http-addr", "", "HTTP address to announce and listen on, IP:PORT")
	fs.StringVar(&f.httpTo, "http-to", "", "where connections to -http-addr are relayed")
	fs.DurationVar(&f.duration, "duration", 0, "stop after this long (0: run until SIGTERM or SIGINT)")
	code, ok := parseFlags(fs, args, stderr, f.check)
	if !ok {
		return code
	}
	log := newLogger(stderr, "jagent.forge."+f.name, f.logLevel)
	rec, err := openRecorder(f.historyPath, log)
	if err != nil {
		log.Error("cannot start", "error", err)
		return exitError
	}
	defer rec.Close()
	if f.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.duration)
		defer cancel()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	for _, r := range []struct{ what, addr, to string }{{"raft", f.raftAddr, f.raftTo}, {"http", f.httpAddr, f.httpTo}} {
		if r.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", r.addr)
		if err != nil {
			log.Error("cannot start", "error", err)
			return exitError
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			relay(ctx, ln, r.to, func() {
				if err := rec.Write(history.Event{Proc: f.name, Kind: history.Forged, F: r.what}); err != nil {
					log.Error("history write failed", "error", err)
				}
			}, log)
		}()
	}
	ml, err := f.joinGossip(log)
	if err != nil {
		log.Error("cannot start", "error", err)
		return exitError
	}
	log.Info("announcing a forged server", "id", f.id, "raft_addr", f.raftAddr, "http_addr", f.httpAddr)
	<-ctx.Done()
	_ = ml.Leave(time.Second)
	_ = ml.Shutdown()
	return exitOK
}

func (f *forgeFlags) check() error {
	if f.historyPath == "" {
		return errors.New("-history is required")
	}
	if f.id == "" {
		return errors.New("-id is required")
	}
	if len(splitList(f.join)) == 0 {
		return errors.New("-join is required")
	}
	for _, a := range append([]string{f.gossip, f.raftAddr, f.raftTo, f.httpAddr, f.httpTo}, splitList(f.join)...) {
		if a == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("address %q: %w", a, err)
		}
	}
	if f.gossip == "" {
		return errors.New("-gossip-addr is required")
	}
	if (f.raftAddr == "") != (f.raftTo == "") || (f.httpAddr == "") != (f.httpTo == "") {
		return errors.New("-raft-addr goes with -raft-to, and -http-addr with -http-to")
	}
	return nil
}

// joinGossip joins the servers' gossip with the key of TENURE_GOSSIP_KEY,
// announcing the forged server's metadata.
func (f *forgeFlags) joinGossip(log hclog.Logger) (*memberlist.Memberlist, error) {
	host, port, _ := net.SplitHostPort(f.gossip)
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("-gossip-addr: %w", err)
	}
	meta := client.MemberMeta{Role: "server", ID: f.id, RaftAddr: f.raftAddr, HTTPAddr: f.httpAddr,
		BootstrapExpect: f.expect, ClusterName: f.cluster}
	mc := memberlist.DefaultLANConfig()
	mc.Name = "forged-" + f.name
	mc.BindAddr, mc.BindPort = host, p
	mc.AdvertiseAddr, mc.AdvertisePort = host, p
	mc.LogOutput = log.StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true})
	if s := os.Getenv(worker.EnvGossipKey); s != "" {
		keys, err := worker.ParseGossipKeys(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", worker.EnvGossipKey, err)
		}
		kr, err := memberlist.NewKeyring(keys, keys[0])
		if err != nil {
			return nil, err
		}
		mc.Keyring = kr
		for _, k := range keys {
			meta.Keys = append(meta.Keys, client.KeyFingerprint(k))
		}
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	mc.Delegate = forgedMeta(b)
	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, err
	}
	if _, err := ml.Join(splitList(f.join)); err != nil {
		ml.Shutdown()
		return nil, fmt.Errorf("join: %w", err)
	}
	return ml, nil
}

// forgedMeta is a memberlist.Delegate that announces fixed metadata.
type forgedMeta []byte

func (m forgedMeta) NodeMeta(limit int) []byte                { return m[:min(len(m), limit)] }
func (forgedMeta) NotifyMsg([]byte)                           {}
func (forgedMeta) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (forgedMeta) LocalState(join bool) []byte                { return nil }
func (forgedMeta) MergeRemoteState(buf []byte, join bool)     {}

// relay accepts connections on ln until ctx ends and copies each, both
// ways, to a connection to to; seen is called for each accepted one.
func relay(ctx context.Context, ln net.Listener, to string, seen func(), log hclog.Logger) {
	go func() { <-ctx.Done(); ln.Close() }()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		seen()
		go func() {
			defer c.Close()
			d := net.Dialer{Timeout: 2 * time.Second}
			up, err := d.DialContext(ctx, "tcp", to)
			if err != nil {
				log.Debug("relay dial failed", "to", to, "error", err)
				return
			}
			defer up.Close()
			unhook := context.AfterFunc(ctx, func() { c.Close(); up.Close() })
			defer unhook()
			done := make(chan struct{}, 2)
			go func() { io.Copy(up, c); done <- struct{}{} }()
			go func() { io.Copy(c, up); done <- struct{}{} }()
			<-done
		}()
	}
}
