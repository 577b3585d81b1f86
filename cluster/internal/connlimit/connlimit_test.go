package connlimit

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

func trustOnly(ip string) func(string) bool { return func(a string) bool { return a == ip } }

// The rules of both kinds of port: Raft's and gossip's (servers past the
// total), HTTP's (a reserve under the total kept for servers), and the
// cap per address that binds servers too.
func TestGateRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits Limits
		// open are the addresses already admitted, in order; then ip
		// asks.
		open []string
		ip   string
		want bool
	}{
		{"under every cap", Limits{Max: 2, PerClient: 2}, []string{"a"}, "b", true},
		{"total reached", Limits{Max: 2, PerClient: 2}, []string{"a", "b"}, "c", false},
		{"per address reached", Limits{Max: 4, PerClient: 2}, []string{"a", "a"}, "a", false},
		{"another address under the per-address cap", Limits{Max: 4, PerClient: 2}, []string{"a", "a"}, "b", true},
		{"server past the total", Limits{Max: 2, PerClient: 2, Trusted: trustOnly("s"), TrustedPastMax: true}, []string{"a", "b"}, "s", true},
		{"server at its cap per address", Limits{Max: 8, PerClient: 2, Trusted: trustOnly("s"), TrustedPastMax: true}, []string{"s", "s"}, "s", false},
		{"stranger in the reserve", Limits{Max: 4, PerClient: 4, Reserve: 1, Trusted: trustOnly("s")}, []string{"a", "b", "c"}, "d", false},
		{"server in the reserve", Limits{Max: 4, PerClient: 4, Reserve: 1, Trusted: trustOnly("s")}, []string{"a", "b", "c"}, "s", true},
		{"server past the total with a reserve", Limits{Max: 4, PerClient: 4, Reserve: 1, Trusted: trustOnly("s")}, []string{"a", "b", "c", "s"}, "s", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := New(tc.limits)
			for _, ip := range tc.open {
				if !g.Enter(ip) {
					t.Fatalf("setup: %s refused", ip)
				}
			}
			if got := g.Enter(tc.ip); got != tc.want {
				t.Fatalf("Enter(%s) = %v, want %v", tc.ip, got, tc.want)
			}
			open, refused := g.Counts()
			wantOpen, wantRefused := len(tc.open), uint64(1)
			if tc.want {
				wantOpen, wantRefused = wantOpen+1, 0
			}
			if open != wantOpen || refused != wantRefused {
				t.Fatalf("Counts() = %d, %d; want %d, %d", open, refused, wantOpen, wantRefused)
			}
		})
	}
}

// A place given back is taken again, in all and for its address.
func TestGateLeave(t *testing.T) {
	g := New(Limits{Max: 1, PerClient: 1})
	if !g.Enter("a") || g.Enter("b") {
		t.Fatal("want a admitted, b refused")
	}
	g.Leave("a")
	if !g.Enter("b") {
		t.Fatal("b refused after a left")
	}
	if open, _ := g.Counts(); open != 1 {
		t.Fatalf("open = %d, want 1", open)
	}
}

// listen returns a loopback listener within gate, closed at the end.
func listen(t *testing.T, gate *Gate) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listener(ln, gate)
	t.Cleanup(func() { l.Close() })
	return l
}

// dial connects to ln and closes the connection at the end.
func dial(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByPeer reports whether the other end closed c within d.
func closedByPeer(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

// A connection past the caps is closed at accept; an admitted one gives
// its place back at Close, once however often it is closed.
func TestListenerClosesPastTheCaps(t *testing.T) {
	gate := New(Limits{Max: 1, PerClient: 1})
	ln := listen(t, gate)
	first := dial(t, ln)
	admitted, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	second := dial(t, ln)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	if !closedByPeer(second, 5*time.Second) {
		t.Fatal("a connection past the cap was not closed")
	}
	if closedByPeer(first, 100*time.Millisecond) {
		t.Fatal("the admitted connection was closed")
	}
	admitted.Close()
	admitted.Close()
	if open, refused := gate.Counts(); open != 0 || refused != 1 {
		t.Fatalf("Counts() = %d, %d; want 0, 1", open, refused)
	}
	dial(t, ln)
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("a connection after the place was given back was not accepted")
	}
}

// A connection that sends nothing within the handshake timeout is cut;
// one that has sent its first bytes then has no deadline.
func TestHandshakeDeadline(t *testing.T) {
	ln := HandshakeDeadline(listen(t, New(Limits{Max: 4, PerClient: 4})), 200*time.Millisecond)
	for _, tc := range []struct {
		name    string
		send    bool
		wantCut bool
	}{
		{"silent", false, true},
		{"started", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, ln)
			s, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if tc.send {
				if _, err := c.Write([]byte("x")); err != nil {
					t.Fatal(err)
				}
				var b [1]byte
				if _, err := s.Read(b[:]); err != nil {
					t.Fatalf("first read: %v", err)
				}
			}
			time.Sleep(400 * time.Millisecond) // past the timeout
			c.Write([]byte("y"))
			var b [1]byte
			_, err = s.Read(b[:])
			if cut := errors.Is(err, os.ErrDeadlineExceeded); cut != tc.wantCut {
				t.Fatalf("read after the timeout: %v; want cut %v", err, tc.wantCut)
			}
		})
	}
}
