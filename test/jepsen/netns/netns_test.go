//go:build linux

package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

var testSeq atomic.Int32

// requireRoot skips the test when the machine cannot run it, but fails it
// under CI=true, where a skip would hide that nothing was tested.
func requireRoot(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %v", err)
		}
		t.Skipf("needs root with ip and iptables: %v", err)
	}
}

// testPrefix is unique to this process and call, and no prefix of another.
func testPrefix() string {
	return fmt.Sprintf("tnjt%d-%04d", os.Getpid(), testSeq.Add(1))
}

func setup(t *testing.T, nodes ...string) *Net {
	t.Helper()
	requireRoot(t)
	n, err := Setup(Config{
		Prefix: testPrefix(),
		Subnet: "10.201.7",
		Nodes:  nodes,
		Log:    hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: os.Stderr}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return n
}

// dialable reports whether node from (or "hub") can open a TCP connection
// to l within timeout.
func dialable(n *Net, from string, l net.Listener, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var c net.Conn
	var err error
	if from == "hub" {
		c, err = n.DialContext(ctx, "tcp4", l.Addr().String())
	} else {
		c, err = n.DialFrom(ctx, from, "tcp4", l.Addr().String())
	}
	if err != nil {
		return err
	}
	return c.Close()
}

// dialFrom dials addr over TCP from node within five seconds, failing t
// when it cannot; the connection is closed when the test ends.
func dialFrom(t *testing.T, n *Net, node, addr string) net.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := n.DialFrom(ctx, node, "tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func listen(t *testing.T, n *Net, node string) net.Listener {
	t.Helper()
	l, err := n.ListenIn(node, "tcp4", n.Addr(node)+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go acceptAndClose(l)
	return l
}

// expectReach checks, concurrently, that each "from>to" pair connects
// when want is true and does not within 300ms when it is false.
func expectReach(t *testing.T, n *Net, ls map[string]net.Listener, want map[string]bool) {
	t.Helper()
	errs := make(chan error, len(want))
	for pair, ok := range want {
		from, to, _ := strings.Cut(pair, ">")
		go func() {
			err := dialable(n, from, ls[to], 300*time.Millisecond)
			switch {
			case ok && err != nil:
				errs <- fmt.Errorf("%s cannot reach %s: %v", from, to, err)
			case !ok && err == nil:
				errs <- fmt.Errorf("%s reaches %s, want it cut off", from, to)
			default:
				errs <- nil
			}
		}()
	}
	for range want {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestSetupCheckAndClose(t *testing.T) {
	t.Parallel()
	n := setup(t, "n1", "n2", "n3")
	if got := n.Addr("n2"); got != "10.201.7.2" {
		t.Errorf("Addr(n2) = %q, want 10.201.7.2", got)
	}
	if got := n.Hub(); got != "10.201.7.254" {
		t.Errorf("Hub() = %q, want 10.201.7.254", got)
	}
	prefix := strings.TrimSuffix(n.Namespace("n1"), "-n1")
	if err := n.CheckConnectivity(context.Background()); err != nil {
		t.Fatal(err)
	}
	out, err := n.Command("n3", "ip", "-4", "-o", "addr", "show", "dev", "eth0").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "10.201.7.3/24") {
		t.Fatalf("eth0 of n3: %s %v, want 10.201.7.3/24", out, err)
	}
	if _, err := Setup(Config{Prefix: prefix, Subnet: "10.201.8", Nodes: []string{"n1"}}); err == nil {
		t.Fatal("second Setup with the same prefix succeeded")
	}
	if err := n.CheckConnectivity(context.Background()); err != nil {
		t.Fatalf("after a clashing Setup: %v", err)
	}
	if err := n.Command("n9", "true").Start(); err == nil {
		t.Error("Command of an unknown node started")
	}
	sleeper := n.Command("n2", "sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	wantKilled(t, sleeper, "process inside n2 after Close")
	list := namespaces(t)
	if strings.Contains(list, prefix+"-") {
		t.Errorf("namespaces left after Close:\n%s", list)
	}
	if owners, _ := filepath.Glob(filepath.Join(ownerDir, prefix+"-*")); len(owners) > 0 {
		t.Errorf("owner files left after Close: %v", owners)
	}
	if err := n.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := n.Drop("n1", "n2"); err == nil {
		t.Error("Drop after Close succeeded")
	}
}

func TestDropIsOneWay(t *testing.T) {
	t.Parallel()
	n := setup(t, "n1", "n2")
	udp := map[string]net.PacketConn{}
	for _, node := range []string{"n1", "n2"} {
		pc, err := n.ListenPacketIn(node, "udp4", n.Addr(node)+":0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Close() })
		udp[node] = pc
	}
	// arrives reports whether a datagram from one node reaches the other.
	arrives := func(from, to string) bool {
		msg := []byte("from " + from)
		if _, err := udp[from].WriteTo(msg, udp[to].LocalAddr()); err != nil {
			t.Fatal(err)
		}
		udp[to].SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		buf := make([]byte, 64)
		for {
			k, _, err := udp[to].ReadFrom(buf)
			if err != nil {
				return false
			}
			if string(buf[:k]) == string(msg) {
				return true
			}
		}
	}
	if !arrives("n1", "n2") || !arrives("n2", "n1") {
		t.Fatal("datagrams lost before any fault")
	}
	for range 2 { // idempotent
		if err := n.Drop("n1", "n2"); err != nil {
			t.Fatal(err)
		}
	}
	if arrives("n1", "n2") {
		t.Error("n1's datagram reached n2 after Drop(n1, n2)")
	}
	if !arrives("n2", "n1") {
		t.Error("n2's datagram did not reach n1 after Drop(n1, n2)")
	}
	if d := n.Describe(); !strings.Contains(d, "drops packets from: n1") || !strings.Contains(d, "-s 10.201.7.1/32 -j DROP") {
		t.Errorf("Describe does not show the drop:\n%s", d)
	}
	if err := n.Heal(); err != nil {
		t.Fatal(err)
	}
	if !arrives("n1", "n2") {
		t.Error("n1's datagram did not reach n2 after Heal")
	}
	if err := n.Drop("n1", "n1"); err == nil {
		t.Error("Drop(n1, n1) succeeded")
	}
	if err := n.Drop("n1", "nope"); err == nil {
		t.Error("Drop to an unknown node succeeded")
	}
}

func TestBlockPartitionHeal(t *testing.T) {
	t.Parallel()
	n := setup(t, "n1", "n2", "n3")
	ls := map[string]net.Listener{}
	for _, node := range n.Nodes() {
		ls[node] = listen(t, n, node)
	}
	if err := n.Block("n1", "n2"); err != nil {
		t.Fatal(err)
	}
	expectReach(t, n, ls, map[string]bool{
		"n1>n2": false, "n2>n1": false, "n1>n3": true, "n3>n2": true,
		"hub>n1": true, "hub>n2": true,
	})
	// Replaces the block; n3 is in no group and talks to everyone.
	if err := n.Partition([]string{"n1"}, []string{"n2"}); err != nil {
		t.Fatal(err)
	}
	expectReach(t, n, ls, map[string]bool{
		"n1>n2": false, "n2>n1": false, "n3>n1": true, "n1>n3": true, "n3>n2": true,
	})
	if err := n.Partition([]string{"n1"}, []string{"n2", "n3"}); err != nil {
		t.Fatal(err)
	}
	expectReach(t, n, ls, map[string]bool{
		"n1>n2": false, "n1>n3": false, "n3>n1": false, "n2>n3": true, "n3>n2": true,
		"hub>n1": true, "hub>n2": true, "hub>n3": true,
	})
	if err := n.Partition([]string{"n1", "n2"}, []string{"n2"}); err == nil {
		t.Error("Partition with n2 in two groups succeeded")
	}
	// The check the suite runs after set-up names what it cannot reach.
	if err := n.CheckConnectivity(context.Background()); err == nil || !strings.Contains(err.Error(), "n1") {
		t.Fatalf("connectivity check with n1 cut off: %v, want an error naming n1", err)
	}
	if err := n.Heal(); err != nil {
		t.Fatal(err)
	}
	if err := n.CheckConnectivity(context.Background()); err != nil {
		t.Fatalf("after Heal: %v", err)
	}
}

// wantKilled waits for cmd and fails t, naming what, unless SIGKILL ended
// it.
func wantKilled(t *testing.T, cmd *exec.Cmd, what string) {
	t.Helper()
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("%s: %v, want killed by SIGKILL", what, err)
	}
}

// namespaces returns what `ip netns list` prints.
func namespaces(t *testing.T) string {
	t.Helper()
	list, err := run("ip", "netns", "list")
	if err != nil {
		t.Fatal(err)
	}
	return list
}
