package jepsen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenure-io/tenure/test/jepsen/check"
	"github.com/tenure-io/tenure/test/jepsen/history"
	"github.com/tenure-io/tenure/test/jepsen/netns"

	"github.com/tenure-io/tenure/client"
)

// Ports inside every namespace (each node has its own address).
const (
	portHTTP   = 7000
	portRaft   = 7001
	portGossip = 7002
	portWorker = 7102 // a placement worker's gossip
	portStatus = 7103 // a placement worker's /keys
	portStore  = 7200
)

// Timings of the servers: elections of about a second, as in the
// integration tests, and small snapshots so a lagging follower needs one.
const (
	electionTimeout = 500 * time.Millisecond
	registerTTL     = 1500 * time.Millisecond
	holderTTL       = 2 * time.Second
	balanceSettle   = time.Second
)

var serverTimings = []string{
	"-heartbeat-timeout", "500ms",
	"-election-timeout", "500ms",
	"-leader-lease-timeout", "500ms",
	"-min-ttl", "1s",
	"-snapshot-interval", "1s",
	"-snapshot-threshold", "256",
	"-trailing-logs", "128",
	"-balance-settle", balanceSettle.String(),
	"-balance-debounce", "200ms",
}

// world is one run's network and processes.
type world struct {
	cfg     runConfig
	log     hclog.Logger
	net     *netns.Net
	http    *http.Client
	servers []*proc
	agents  []*proc
	store   *proc
	sec     *secure // TLS, gossip key and ACL tokens of the run

	mu      sync.Mutex
	samples []check.StatusSample

	snapshotInstalls atomic.Int64 // installs the snapshot-install nemesis saw
	corruptRefusals  atomic.Int64 // damaged logs the corrupt-follower nemesis saw refused
	disks            disks        // the disk nemeses' mounts and effects
	adv              adversary    // the attacks of the adversary nemeses
	groupCreated     int64        // when the placement group's creation was acknowledged
}

func (w *world) all() []*proc {
	out := append([]*proc{}, w.servers...)
	if w.store != nil {
		out = append(out, w.store)
	}
	if w.adv.proc != nil {
		out = append(out, w.adv.proc)
	}
	return append(out, w.agents...)
}

func (w *world) url(p *proc, path string) string {
	scheme := "https"
	if w.sec.plain {
		scheme = "http"
	}
	return fmt.Sprintf("%s://%s:%d%s", scheme, w.net.Addr(p.name), portHTTP, path)
}

func (w *world) serverURLs() string {
	return strings.Join(w.serverURLList(), ",")
}

func (w *world) serverURLList() []string {
	var out []string
	for _, s := range w.servers {
		out = append(out, w.url(s, ""))
	}
	return out
}

// serverArgs are the flags of server p; every server bootstraps through
// gossip with the others.
func (w *world) serverArgs(p *proc) []string {
	addr := w.net.Addr(p.name)
	var join []string
	for _, s := range w.servers {
		if s != p {
			join = append(join, fmt.Sprintf("%s:%d", w.net.Addr(s.name), portGossip))
		}
	}
	args := []string{"server",
		"-node-id", p.name,
		"-data-dir", p.dataDir,
		"-http-addr", fmt.Sprintf("%s:%d", addr, portHTTP),
		"-raft-addr", fmt.Sprintf("%s:%d", addr, portRaft),
		"-gossip-addr", fmt.Sprintf("%s:%d", addr, portGossip),
		"-bootstrap-expect", strconv.Itoa(len(w.servers)),
		"-join", strings.Join(join, ","),
		"-log-level", "debug",
	}
	args = append(args, w.sec.serverArgs(p.name)...)
	return append(args, serverTimings...)
}

func (w *world) startProc(p *proc) error {
	return p.start(w.net.Command(p.name, p.bin, p.args...))
}

// restart starts a server again with its data dir.
func (w *world) restart(p *proc) error {
	if err := w.startProc(p); err != nil {
		return err
	}
	w.log.Info("restarted", "proc", p.name)
	return nil
}

// status is GET /v1/status.
type status = client.NodeStatus

// call sends a JSON request from the hub and decodes a 2xx answer into out.
func (w *world) call(ctx context.Context, method, url string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	w.sec.authorize(req)
	resp, err := w.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, bytes.TrimSpace(b))
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %w", method, url, err)
		}
	}
	return resp.StatusCode, nil
}

func (w *world) status(ctx context.Context, p *proc) (status, error) {
	var st status
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := w.call(ctx, http.MethodGet, w.url(p, "/v1/status"), nil, &st)
	return st, err
}

// eachStatus calls f with the status of each running server that answers,
// in the order of w.servers.
func (w *world) eachStatus(ctx context.Context, f func(s *proc, st status)) {
	for _, s := range w.servers {
		if !s.running() {
			continue
		}
		if st, err := w.status(ctx, s); err == nil {
			f(s, st)
		}
	}
}

// namesExcept returns the names of the servers other than p.
func (w *world) namesExcept(p *proc) []string {
	var names []string
	for _, s := range w.servers {
		if s != p {
			names = append(names, s.name)
		}
	}
	return names
}

// leader returns the server that reports itself leader in the highest
// term, or nil.
func (w *world) leader(ctx context.Context) *proc {
	var best *proc
	var term uint64
	w.eachStatus(ctx, func(s *proc, st status) {
		if st.Role == "leader" && st.Term >= term {
			best, term = s, st.Term
		}
	})
	return best
}

// waitReady waits until some server is an established leader and every
// running server answers.
func (w *world) waitReady(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		ready, answered := false, 0
		for _, s := range w.servers {
			if st, err := w.status(ctx, s); err == nil {
				answered++
				ready = ready || (st.Role == "leader" && st.Ready)
			}
		}
		if ready && answered == len(w.servers) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not ready after %v (%d of %d servers answer, leader ready %v)", d, answered, len(w.servers), ready)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// pollStatus samples every server's role and term until ctx ends, for the
// one-leader-per-term check.
func (w *world) pollStatus(ctx context.Context) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		w.eachStatus(ctx, func(s *proc, st status) {
			w.mu.Lock()
			w.samples = append(w.samples, check.StatusSample{T: history.Now(), Node: s.name, State: st.Role, Term: st.Term, Leader: st.LeaderID})
			w.mu.Unlock()
		})
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// writeJSON writes v as indented JSON to dir/name.
func writeJSON(dir, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644)
}
