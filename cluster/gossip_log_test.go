package cluster_test

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/cluster/internal/limitedlog"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// encryptedGossipServer starts one server whose gossip is encrypted with
// the key of bytes 1 to 32, logging at Info to logs; reg, if not nil,
// takes its metrics.
func encryptedGossipServer(t *testing.T, logs *harness.Buffer, reg prometheus.Registerer) *inproc.Cluster {
	t.Helper()
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i + 1)
	}
	return gossipCluster(t, 1, func(cfg *cluster.Config) {
		cfg.GossipKey = key
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})
		if reg != nil {
			cfg.Registerer = reg
		}
	})
}

// TestGossipGarbageLogIsBounded: anyone who reaches a server's gossip
// port, with no key at all, sends it 2,000 UDP packets of garbage; each
// one makes memberlist log "Decrypt packet failed", and the server writes
// at most 10 of them (the limit per kind), so that a stranger cannot fill
// the log or push everything else out of /v1/debug/logs;
// tenure_log_lines_suppressed_total{source="memberlist"} counts the rest.
func TestGossipGarbageLogIsBounded(t *testing.T) {
	logs := &harness.Buffer{}
	reg := prometheus.NewRegistry()
	c := encryptedGossipServer(t, logs, reg)
	addr := c.GossipAddr(0)
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const kind = "Decrypt packet failed"
	before := strings.Count(logs.String(), kind)
	garbage := []byte("\x01not a gossip packet, and no key either")
	for range 2000 {
		conn.Write(garbage)
	}
	var lines int
	harness.Holds(t, 2*time.Second, func() error { lines = strings.Count(logs.String(), kind) - before; return nil })
	if lines > limitedlog.DefaultLines || lines == 0 {
		sample := logs.String()
		if i := strings.Index(sample, "memberlist"); i >= 0 {
			sample = sample[max(0, i-40):min(len(sample), i+200)]
		}
		t.Errorf("2000 garbage packets from a stranger wrote %d %q log lines, want 1 to %d, e.g. %q", lines, kind, limitedlog.DefaultLines, sample)
	}
	if n := suppressedLines(t, reg, "memberlist"); n == 0 {
		t.Errorf("tenure_log_lines_suppressed_total{source=\"memberlist\"} is 0 after %d of 2000 lines were logged", lines)
	}
}

// TestRefusedPlainGossipNamesTheMember: a worker started without the
// gossip key joins a server whose gossip is encrypted; the server refuses
// each attempt, and its line about it names the worker (node name, gossip
// address, role), not only the connection's source port. Those lines stay
// within the limit per kind.
func TestRefusedPlainGossipNamesTheMember(t *testing.T) {
	logs := &harness.Buffer{}
	c := encryptedGossipServer(t, logs, nil)
	mc := memberlist.DefaultLANConfig()
	mc.Name = "w1#0badc0de"
	mc.BindAddr, mc.BindPort, mc.AdvertiseAddr = "127.0.0.1", 0, "127.0.0.1"
	mc.Delegate = inproc.MetaDelegate(`{"role":"worker","id":"w1"}`)
	mc.LogOutput = io.Discard
	keyless, err := memberlist.Create(mc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keyless.Shutdown() })
	const kind = "encryption is configured but remote state is not encrypted"
	const attempts = 30
	for range attempts {
		if n, _ := keyless.Join([]string{c.GossipAddr(0)}); n > 0 {
			t.Fatal("a member without the key joined encrypted gossip")
		}
	}
	want := fmt.Sprintf("member=w1#0badc0de member_addr=%s role=worker", keyless.LocalNode().Address())
	var lines []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, kind) {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 || len(lines) > limitedlog.DefaultLines {
		t.Fatalf("%d refused joins wrote %d %q lines, want 1 to %d", attempts, len(lines), kind, limitedlog.DefaultLines)
	}
	for _, line := range lines {
		if !strings.Contains(line, want) {
			t.Errorf("the server's line %q does not name the member: want %q in it", line, want)
		}
	}
}

// TestUndecryptableGossipOfAMemberNamesIt: a member that joined under the
// cluster's key switches to a key the servers do not hold (as a worker
// left out of a rotation); the server's lines about its packets that no
// key decrypts name it, from the address it gossips from.
func TestUndecryptableGossipOfAMemberNamesIt(t *testing.T) {
	logs := &harness.Buffer{}
	key, other := make([]byte, 32), make([]byte, 32)
	for i := range key {
		key[i], other[i] = byte(i+1), byte(i+101)
	}
	c := gossipCluster(t, 1, func(cfg *cluster.Config) {
		cfg.GossipKey = key
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})
	})
	kr, err := memberlist.NewKeyring(nil, key)
	if err != nil {
		t.Fatal(err)
	}
	mc := memberlist.DefaultLANConfig()
	mc.Name = "w2#0badc0de"
	mc.BindAddr, mc.BindPort, mc.AdvertiseAddr = "127.0.0.1", 0, "127.0.0.1"
	mc.Delegate = inproc.MetaDelegate(`{"role":"worker","id":"w2"}`)
	mc.Keyring, mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = kr, true, true
	mc.ProbeInterval = 100 * time.Millisecond
	mc.LogOutput = io.Discard
	m, err := memberlist.Create(mc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown() })
	if _, err := m.Join([]string{c.GossipAddr(0)}); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, 5*time.Second, func() error {
		for _, mem := range c.Node(0).Members() {
			if mem.Name == mc.Name && mem.Status == "alive" {
				return nil
			}
		}
		return fmt.Errorf("the server does not list %s", mc.Name)
	})
	if err := kr.AddKey(other); err != nil {
		t.Fatal(err)
	}
	if err := kr.UseKey(other); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("from=%s member=w2#0badc0de role=worker", m.LocalNode().Address())
	harness.WaitFor(t, 5*time.Second, func() error {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "Decrypt packet failed") {
				if !strings.Contains(line, want) {
					return fmt.Errorf("the server's line %q does not name the member: want %q in it", line, want)
				}
				return nil
			}
		}
		return fmt.Errorf("no Decrypt packet failed line yet")
	})
}

// TestRaftTransportGarbageLogIsBounded: without TLS, anyone who reaches
// a server's Raft port can open connections that send what is not a Raft
// RPC; Raft's transport logs "failed to decode incoming command" for each,
// and the server writes at most 10 of them every 10 s.
func TestRaftTransportGarbageLogIsBounded(t *testing.T) {
	logs := &harness.Buffer{}
	reg := prometheus.NewRegistry()
	c := gossipCluster(t, 1, func(cfg *cluster.Config) {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})
		cfg.Registerer = reg
	})
	const kind = "failed to decode incoming command"
	before := strings.Count(logs.String(), kind)
	const conns = 200
	for range conns {
		conn, err := net.Dial("tcp", c.Peer(0).RaftAddr)
		if err != nil {
			t.Fatal(err)
		}
		// An AppendEntries type byte, then what is not msgpack of one.
		conn.Write([]byte("\x00\xc1 not a raft rpc"))
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		conn.Read(make([]byte, 1)) // until the server closes it
		conn.Close()
	}
	harness.WaitFor(t, 5*time.Second, func() error {
		if n := suppressedLines(t, reg, "raft_transport"); n+float64(strings.Count(logs.String(), kind)-before) < conns {
			return fmt.Errorf("%v lines suppressed and %d logged of %d connections", n, strings.Count(logs.String(), kind)-before, conns)
		}
		return nil
	})
	if lines := strings.Count(logs.String(), kind) - before; lines > limitedlog.DefaultLines || lines == 0 {
		t.Errorf("%d connections of garbage to the Raft port wrote %d %q log lines, want 1 to %d", conns, lines, kind, limitedlog.DefaultLines)
	}
}

// suppressedLines is tenure_log_lines_suppressed_total{source} in reg.
func suppressedLines(t *testing.T, reg *prometheus.Registry, source string) float64 {
	t.Helper()
	n, ok := inproc.CounterBy(t, reg, "tenure_log_lines_suppressed_total", "source")[source]
	if !ok {
		t.Fatalf("no tenure_log_lines_suppressed_total{source=%q}", source)
	}
	return n
}
