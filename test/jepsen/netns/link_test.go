//go:build linux

package netns

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// unbuilt returns a Net that exists only in memory: no namespaces, no
// rules, no root needed.
func unbuilt(t *testing.T, nodes ...string) *Net {
	t.Helper()
	n, err := newNet(Config{Prefix: "tnjunit", Subnet: "10.201.7", Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDelayLinkRejectsBadArguments(t *testing.T) {
	n := unbuilt(t, "n1", "n2")
	for _, tc := range []struct {
		name     string
		from, to string
		d        time.Duration
	}{
		{"to itself", "n1", "n1", time.Second},
		{"unknown sender", "n9", "n2", time.Second},
		{"unknown receiver", "n1", "n9", time.Second},
		{"the hub", "n1", "hub", time.Second},
		{"negative delay", "n1", "n2", -time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := n.DelayLink(tc.from, tc.to, tc.d); err == nil {
				t.Errorf("DelayLink(%s, %s, %v) succeeded", tc.from, tc.to, tc.d)
			}
		})
	}
}

// A delayed link queues the sender's packets at that receiver only, on a
// queue of its own, and ahead of the sender's shaping delay.
func TestShapeRulesOfDelayedLinks(t *testing.T) {
	n := unbuilt(t, "n1", "n2", "n3")
	n.delay = DelayNFQueue
	n.setLink("n1", "n2", 2*time.Second, true)
	n.shapes["n1"] = Shaping{Delay: 10 * time.Millisecond, Loss: 0.5}
	link := "-A TNJ-SHAPE -s 10.201.7.1/32 -j NFQUEUE --queue-num 257 --queue-bypass"
	shaped := "-A TNJ-SHAPE -s 10.201.7.1/32 -j NFQUEUE --queue-num 1 --queue-bypass"
	loss := "-A TNJ-SHAPE -s 10.201.7.1/32 -m statistic --mode random --probability 0.500000 -j DROP"
	for _, tc := range []struct {
		receiver string
		want     []string
	}{
		{"n2", []string{"-F TNJ-SHAPE", loss, link, shaped}},
		{"n3", []string{"-F TNJ-SHAPE", loss, shaped}},
		{"n1", []string{"-F TNJ-SHAPE"}},
		{"hub", []string{"-F TNJ-SHAPE", shaped}},
	} {
		r := n.hub
		if tc.receiver != "hub" {
			r = n.nodes[tc.receiver]
		}
		got := n.shapeRules(r)
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("rules of %s:\ngot  %q\nwant %q", tc.receiver, got, tc.want)
		}
	}
	n.setLink("n1", "n2", 0, false)
	if got := n.shapeRules(n.nodes["n2"]); strings.Contains(strings.Join(got, "\n"), "257") {
		t.Errorf("rules of n2 after the link delay is forgotten: %q", got)
	}
	if len(n.links) != 0 {
		t.Errorf("links after the only one is forgotten: %v", n.links)
	}
}

// oneWayTimes sends one byte each way over c (n1's end) and s (n2's end)
// and returns how long each took to arrive.
func oneWayTimes(t *testing.T, c, s net.Conn) (forth, back time.Duration) {
	t.Helper()
	travel := func(w, r net.Conn) time.Duration {
		r.SetReadDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		if _, err := w.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(r, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	return travel(c, s), travel(s, c)
}

func TestDelayLinkIsOneWay(t *testing.T) {
	t.Parallel()
	n := setup(t, "n1", "n2", "n3")
	l, err := n.ListenIn("n2", "tcp4", n.Addr("n2")+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	c := dialFrom(t, n, "n1", l.Addr().String())
	s, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer s.Close()
	const d = 300 * time.Millisecond
	if err := n.DelayLink("n1", "n2", d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(n.Describe(), "delays packets from n1 by 300ms") {
		t.Errorf("Describe does not show the delayed link:\n%s", n.Describe())
	}
	forth, back := oneWayTimes(t, c, s)
	if forth < d-50*time.Millisecond || forth > d+500*time.Millisecond {
		t.Errorf("n1 -> n2 on the delayed link took %v, want about %v", forth, d)
	}
	if back > 100*time.Millisecond {
		t.Errorf("n2 -> n1 took %v, want it undelayed", back)
	}
	// Other links of n1, and the hub's link to n2, are untouched.
	ls := map[string]net.Listener{"n2": l, "n3": listen(t, n, "n3")}
	for _, from := range []string{"n1", "hub"} {
		to := "n3"
		if from == "hub" {
			to = "n2"
		}
		start := time.Now()
		if err := dialable(n, from, ls[to], 2*time.Second); err != nil {
			t.Fatal(err)
		}
		if rtt := time.Since(start); rtt > 100*time.Millisecond {
			t.Errorf("connect %s -> %s took %v, want it undelayed", from, to, rtt)
		}
	}
	if err := n.DelayLink("n1", "n2", 0); err != nil {
		t.Fatal(err)
	}
	if forth, _ := oneWayTimes(t, c, s); forth > 100*time.Millisecond {
		t.Errorf("n1 -> n2 after DelayLink 0 took %v, want it undelayed", forth)
	}
	if err := n.DelayLink("n1", "n2", d); err != nil {
		t.Fatal(err)
	}
	if err := n.ClearShaping("n2"); err != nil {
		t.Fatal(err)
	}
	if forth, _ := oneWayTimes(t, c, s); forth > 100*time.Millisecond {
		t.Errorf("n1 -> n2 after ClearShaping of the receiver took %v, want it undelayed", forth)
	}
}
