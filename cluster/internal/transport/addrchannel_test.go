package transport

import (
	"bufio"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/rounds"
)

// answering is a dialer whose other end reads the address question
// and answers id and http, as a server of that id would.
func answering(t *testing.T, id, http string) rounds.Dialer {
	return func(raft.ServerID, raft.ServerAddress, time.Duration) (net.Conn, error) {
		a, b := net.Pipe()
		go func() {
			defer b.Close()
			var hello [2]byte
			if _, err := b.Read(hello[:1]); err != nil {
				return
			}
			if _, err := b.Read(hello[1:]); err != nil {
				return
			}
			if hello != [2]byte{AddrMagic, addrVersion} {
				t.Errorf("hello %x, want %x %x", hello, AddrMagic, addrVersion)
				return
			}
			w := bufio.NewWriter(b)
			rounds.WriteServerID(w, raft.ServerID(id))
			rounds.WriteServerID(w, raft.ServerID(http))
			w.Flush()
		}()
		return a, nil
	}
}

// A server's HTTP address is taken only from an answer that names the
// server asked, and only when it is an address.
func TestAskHTTPAddr(t *testing.T) {
	for _, tc := range []struct {
		name, id, http string
		ok             bool
	}{
		{"the server asked", "n1", "10.0.0.1:7500", true},
		{"another server answers", "n3", "10.0.0.3:7500", false},
		{"not an address", "n1", "evil", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AskHTTPAddr(answering(t, tc.id, tc.http), "n1", "10.0.0.1:7501", time.Second)
			if tc.ok {
				if err != nil || got != tc.http {
					t.Fatalf("got %q, %v; want %q", got, err, tc.http)
				}
				return
			}
			if !errors.Is(err, ErrAddrAnswer) || got != "" {
				t.Fatalf("got %q, %v; want ErrAddrAnswer", got, err)
			}
		})
	}
}
