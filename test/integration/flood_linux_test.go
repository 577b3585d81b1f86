package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-io/tenure/test/harness"
)

// floodConns are the idle TCP connections of a flood that the server has
// not closed.
type floodConns struct {
	mu     sync.Mutex
	conns  []net.Conn
	opened int
}

// flood opens n idle TCP connections to addr, from the source addresses
// 127.<block>.<x>.<y> (perSource from each), a thousand at a time with a
// few dialers at once, and closes them when the test ends (or at
// closeAll). After each thousand it lets go of those the server closed
// (at accept, past its caps): they cost the server nothing more, and this
// process's file descriptors are limited too. A server that kept every
// connection would make this process run out of them, which fails t.
func flood(t *testing.T, addr string, n, perSource int, block byte) *floodConns {
	t.Helper()
	f := &floodConns{}
	t.Cleanup(f.closeAll)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for from := 0; from < n; from += 1000 {
		to := min(n, from+1000)
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := from + w; i < to; i += 16 {
					src := i / perSource
					d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, block, byte(src/250), byte(1+src%250))}}
					c, err := d.DialContext(ctx, "tcp", addr)
					if err != nil {
						errs <- fmt.Errorf("connection %d to %s (%d kept open by the server so far): %w", i, addr, len(f.conns), err)
						return
					}
					f.mu.Lock()
					f.conns = append(f.conns, c)
					f.opened++
					f.mu.Unlock()
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		f.dropClosed()
	}
	return f
}

// dropClosed closes and forgets the connections the server has closed: a
// read finds their end at once, where an open one waits out a short
// deadline.
func (f *floodConns) dropClosed() {
	f.mu.Lock()
	defer f.mu.Unlock()
	open := make([]bool, len(f.conns))
	var wg sync.WaitGroup
	deadline := time.Now().Add(50 * time.Millisecond)
	for i, c := range f.conns {
		wg.Add(1)
		go func(i int, c net.Conn) {
			defer wg.Done()
			c.SetReadDeadline(deadline)
			_, err := c.Read(make([]byte, 1))
			open[i] = errors.Is(err, os.ErrDeadlineExceeded)
			c.SetReadDeadline(time.Time{})
		}(i, c)
	}
	wg.Wait()
	kept := f.conns[:0]
	for i, c := range f.conns {
		if open[i] {
			kept = append(kept, c)
		} else {
			c.Close()
		}
	}
	f.conns = kept
}

func (f *floodConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

// openFiles counts the file descriptors process pid holds.
func openFiles(pid int) (int, error) {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	return len(ents), err
}

// raiseOpenFiles raises this process's limit of open files to at least n
// (root may raise the hard limit), restoring it when t ends; it skips t
// with the reason when it cannot (fails under CI=true).
func raiseOpenFiles(t *testing.T, n uint64) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if old.Cur >= n {
		return
	}
	want := syscall.Rlimit{Cur: n, Max: max(old.Max, n)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		harness.Missing(t, fmt.Sprintf("the flood needs %d open files; the limit is %d (hard %d) and raising it failed: %v (run as root, or raise ulimit -n)", n, old.Cur, old.Max, err))
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}

// probe is an HTTP client that connects from the source address src, a
// client the servers do not know, one connection per request.
func probe(src string) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// TestFloodOfIdleConnections: 20,000 idle TCP connections against the
// leader's HTTP port, from 40 source addresses, plus floods on its Raft and
// gossip ports. The flooded server holds a bounded number of file
// descriptors; it stays the leader and a healthy member: writes through
// the other servers (forwarded to it) commit, gossip keeps it alive;
// unknown clients are turned away meanwhile, and served again once the
// flood closes. A client that sends its body too slowly is cut.
func TestFloodOfIdleConnections(t *testing.T) {
	const (
		httpFlood, raftFlood, gossipFlood = 20000, 2000, 1000
		maxConns                          = 1000
	)
	// The flood keeps open only what the server keeps (a few thousand at
	// most), but the servers get this process's limit too.
	raiseOpenFiles(t, 8192)
	c := startServers(t, 3, "-http-max-conns", strconv.Itoa(maxConns), "-http-max-conns-per-client", "500", "-http-read-timeout", "2s")
	l := c.leader(t)
	target := c.nodes[l]
	others := c.followers(l)
	c.acquire(t, others[0], "flood/before", "worker", "30s", http.StatusCreated)

	started := time.Now()
	httpConns := flood(t, target.httpAddr, httpFlood, 500, 20)
	raftConns := flood(t, target.raftAddr, raftFlood, 50, 21)
	gossipConns := flood(t, target.gossipAddr, gossipFlood, 25, 22)
	t.Logf("opened %d idle connections in %v; the server kept %d, %d and %d of them open (HTTP, Raft, gossip)",
		httpConns.opened+raftConns.opened+gossipConns.opened, time.Since(started).Round(time.Millisecond), len(httpConns.conns), len(raftConns.conns), len(gossipConns.conns))

	// Bounded: the HTTP cap and its 503 overflow, the Raft and gossip caps
	// (servers counted per address), and the data files.
	const budget = maxConns + maxConns/8 + 16 + (512 + 5*64) + (256 + 5*32) + 256
	pid := target.running().cmd.Process.Pid
	if n, err := openFiles(pid); err != nil || n > budget {
		t.Errorf("the flooded server holds %d file descriptors (%v), want at most %d", n, err, budget)
	}
	// Still the leader, and a healthy member on the others' gossip; writes
	// through the others commit.
	for k, i := range others {
		c.acquire(t, i, "flood/during-"+strconv.Itoa(k), "worker", "30s", http.StatusCreated)
	}
	poll.Holds(t, 5*time.Second, func() error {
		for _, i := range others {
			if st, ok := c.memberStatus(t, i, target.id); !ok || st != "alive" {
				return fmt.Errorf("%s's gossip says %s is %q", c.nodes[i].id, target.id, st)
			}
			s, err := c.status(i)
			if err != nil {
				return err
			}
			if s.LeaderID != target.id {
				return fmt.Errorf("%s names leader %q, want the flooded %s", c.nodes[i].id, s.LeaderID, target.id)
			}
		}
		return nil
	})
	if n, err := openFiles(pid); err != nil || n > budget {
		t.Errorf("the flooded server holds %d file descriptors (%v), want at most %d", n, err, budget)
	}
	// An unknown client is turned away while the flood holds the slots.
	stranger := probe("127.0.200.1")
	if resp, err := stranger.Get(c.scheme + "://" + target.httpAddr + "/v1/status"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("a new client was served during the flood: its connection should be past the cap")
		}
	}

	// The refusals show in the metrics of the flooded server.
	if r := c.call(t, l, http.MethodGet, "/metrics", nil); r.Status != http.StatusOK {
		t.Errorf("/metrics during the flood: %v", r)
	} else {
		m := parseMetrics(r.Body)
		for _, port := range []string{"raft", "gossip"} {
			if got := m[`tenure_inbound_connections_refused_total{port="`+port+`"}`]; got < 1 {
				t.Errorf("tenure_inbound_connections_refused_total{port=%q} = %v during the flood, want > 0", port, got)
			}
		}
	}

	httpConns.closeAll()
	raftConns.closeAll()
	gossipConns.closeAll()
	poll.WaitFor(t, 30*time.Second, func() error {
		resp, err := stranger.Get(c.scheme + "://" + target.httpAddr + "/v1/status")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("after the flood: %d", resp.StatusCode)
		}
		return nil
	})
	c.acquire(t, l, "flood/after", "worker", "30s", http.StatusCreated)

	// A body sent too slowly is cut after -http-read-timeout.
	slow, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.201.1")}}).Dial("tcp", target.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	io.WriteString(slow, "PUT /v1/leases/flood/slow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	slow.SetReadDeadline(time.Now().Add(15 * time.Second))
	if _, err := io.Copy(io.Discard, slow); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a client sending its body too slowly was not cut within 15s")
	}
}
