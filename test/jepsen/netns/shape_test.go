//go:build linux

package netns

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/test/harness"
)

// connectTime returns the fastest of three TCP connects from node from
// (or "hub") to l: one round trip.
func connectTime(t *testing.T, n *Net, from string, l net.Listener) time.Duration {
	t.Helper()
	best := time.Hour
	for range 3 {
		start := time.Now()
		if err := dialable(n, from, l, 2*time.Second); err != nil {
			t.Fatalf("%s to %s: %v", from, l.Addr(), err)
		}
		best = min(best, time.Since(start))
	}
	return best
}

func TestShapeDelay(t *testing.T) {
	t.Parallel()
	n := setup(t, "n1", "n2")
	if n.DelaySupported() == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but this kernel can delay packets neither with netem nor with NFQUEUE")
		}
		t.Skip("this kernel can delay packets neither with netem nor with NFQUEUE")
	}
	t.Logf("delay by %s", n.DelaySupported())
	l := listen(t, n, "n2")
	if rtt := connectTime(t, n, "n1", l); rtt > 20*time.Millisecond {
		t.Fatalf("undelayed connect took %v, want well under 20ms", rtt)
	}
	if err := n.Shape("n2", Shaping{Delay: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	// The SYN-ACK leaves n2 50ms late, towards a node or the hub alike.
	for _, from := range []string{"n1", "hub"} {
		if rtt := connectTime(t, n, from, l); rtt < 40*time.Millisecond || rtt > 500*time.Millisecond {
			t.Errorf("connect from %s to delayed n2 took %v, want about 50ms", from, rtt)
		}
	}
	if n.DelaySupported() == DelayNFQueue && !strings.Contains(n.Describe(), "delayer: ") {
		t.Errorf("Describe does not show the delayer:\n%s", n.Describe())
	}
	if err := n.ClearShaping("n2"); err != nil {
		t.Fatal(err)
	}
	if rtt := connectTime(t, n, "n1", l); rtt > 20*time.Millisecond {
		t.Errorf("connect after ClearShaping took %v, want well under 20ms", rtt)
	}
}

// A stream through two jittery links arrives whole and at speed: the
// delayers neither reorder nor throttle it.
func TestShapeJitterKeepsStreamsWhole(t *testing.T) {
	t.Parallel()
	n := setup(t, "n1", "n2")
	if n.DelaySupported() == "" {
		t.Skip("this kernel cannot delay packets")
	}
	l, err := n.ListenIn("n2", "tcp4", n.Addr("n2")+":0")
	if err != nil {
		t.Fatal(err)
	}
	harness.AcceptEach(t, l, func(c net.Conn) {
		go func() { io.Copy(c, c); c.Close() }()
	})
	for _, node := range []string{"n1", "n2"} {
		if err := n.Shape(node, Shaping{Delay: 10 * time.Millisecond, Jitter: 10 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	c := dialFrom(t, n, "n1", l.Addr().String())
	// 8MB each way takes well under a second at a 20ms round trip on an
	// idle machine; with only a few packets of a connection in flight, as
	// when the sender's own OUTPUT holds them back, it would take half a
	// minute. The deadline sits between the two with room for a loaded CI
	// machine (-race, after the fault suite): 5s was missed there once.
	start := time.Now()
	c.SetDeadline(start.Add(15 * time.Second))
	sent := make([]byte, 8<<20)
	rand.Read(sent)
	go c.Write(sent)
	got := make([]byte, len(sent))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("echo through jittery links: %v", err)
	}
	if !bytes.Equal(got, sent) {
		t.Fatal("echo through jittery links came back different")
	}
	t.Logf("8MB echoed through two jittery links in %v", time.Since(start).Round(time.Millisecond))
}

func TestShapeLoss(t *testing.T) {
	t.Parallel()
	n := setup(t, "n1", "n2")
	ls := map[string]net.Listener{"n1": listen(t, n, "n1"), "n2": listen(t, n, "n2")}
	if err := n.Shape("n2", Shaping{Loss: 1}); err != nil {
		t.Fatal(err)
	}
	// n2 sends nothing, but what it sends to the hub.
	expectReach(t, n, ls, map[string]bool{"n1>n2": false, "n2>n1": false, "hub>n2": true, "hub>n1": true})
	if err := n.Shape("n2", Shaping{}); err != nil { // the zero Shaping clears
		t.Fatal(err)
	}
	expectReach(t, n, ls, map[string]bool{"n1>n2": true, "n2>n1": true})
	if err := n.Shape("n2", Shaping{Loss: 1.5}); err == nil {
		t.Error("Shape with Loss 1.5 succeeded")
	}
}
