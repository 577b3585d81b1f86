package worker

import (
	"errors"
	"net"
	"testing"

	"github.com/tenure-io/tenure/client"
)

// The worker announces a gossip address the servers can reach: loopback
// only while they are on loopback, else the local address that routes to
// the first server; an explicit advertise address always wins.
func TestChooseGossipPlace(t *testing.T) {
	// route plays the routing table: servers in 10.0.0.0/8 are reached
	// from 10.0.0.7, loopback ones from 127.0.0.1; unknown hosts fail.
	route := func(server string) (net.IP, error) {
		host, _, _ := net.SplitHostPort(serverHostPort(server))
		switch ip := net.ParseIP(host); {
		case ip == nil:
			return nil, errors.New("no route")
		case ip.IsLoopback():
			return net.ParseIP("127.0.0.1"), nil
		default:
			return net.ParseIP("10.0.0.7"), nil
		}
	}
	tests := []struct {
		name      string
		bind      string
		bindSet   bool
		advertise string
		servers   []string
		want      gossipPlace
	}{
		{"default, servers on loopback", defaultGossipAddr, false, "", []string{"127.0.0.1:7500"},
			gossipPlace{bindHost: "127.0.0.1", advHost: "127.0.0.1"}},
		{"default, remote servers", defaultGossipAddr, false, "", []string{"http://10.0.0.5:7500"},
			gossipPlace{bindHost: "10.0.0.7", advHost: "10.0.0.7"}},
		{"default, first server unroutable, second remote", defaultGossipAddr, false, "", []string{"nowhere:7500", "10.0.0.6:7946"},
			gossipPlace{bindHost: "10.0.0.7", advHost: "10.0.0.7"}},
		{"default, no route at all: loopback kept", defaultGossipAddr, false, "", []string{"nowhere:7500"},
			gossipPlace{bindHost: "127.0.0.1", advHost: "127.0.0.1"}},
		{"unspecified bind, remote servers", "0.0.0.0:7946", true, "", []string{"10.0.0.5:7946"},
			gossipPlace{bindHost: "0.0.0.0", bindPort: 7946, advHost: "10.0.0.7"}},
		{"unspecified bind, servers on loopback", "[::]:7946", true, "", []string{"127.0.0.1:7946"},
			gossipPlace{bindHost: "::", bindPort: 7946, advHost: "127.0.0.1"}},
		{"specific bind is announced", "10.1.2.3:7946", true, "", []string{"10.0.0.5:7946"},
			gossipPlace{bindHost: "10.1.2.3", bindPort: 7946, advHost: "10.1.2.3"}},
		{"explicit advertise wins", defaultGossipAddr, false, "203.0.113.9:8000", []string{"10.0.0.5:7946"},
			gossipPlace{bindHost: "0.0.0.0", advHost: "203.0.113.9", advPort: 8000}},
		{"explicit advertise host only", "0.0.0.0:7946", true, "203.0.113.9", []string{"127.0.0.1:7946"},
			gossipPlace{bindHost: "0.0.0.0", bindPort: 7946, advHost: "203.0.113.9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := chooseGossipPlace(tt.bind, tt.bindSet, tt.advertise, tt.servers, route)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	if _, err := chooseGossipPlace("no-port", true, "", nil, route); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("a bind address without a port: %v, want client.ErrInvalid", err)
	}
}

// routedIP learns the local address toward a server without sending
// anything: toward loopback, it is loopback.
func TestRoutedIPOnLoopback(t *testing.T) {
	for _, server := range []string{"127.0.0.1:7500", "http://127.0.0.1:7500", "127.0.0.1"} {
		ip, err := routedIP(server)
		if err != nil {
			t.Fatalf("%s: %v", server, err)
		}
		if !ip.IsLoopback() {
			t.Errorf("%s: routed from %v, want a loopback address", server, ip)
		}
	}
}
