package worker

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/tenure-io/tenure/client"
)

// defaultGossipAddr is where a worker's gossip binds unless
// WithGossipAddr says otherwise.
const defaultGossipAddr = "127.0.0.1:0"

// gossipPlace is where a worker's gossip binds and what it announces.
// advHost "" lets memberlist pick; advPort 0 announces the bound port.
type gossipPlace struct {
	bindHost string
	bindPort int
	advHost  string
	advPort  int
}

// chooseGossipPlace decides where a worker's gossip binds and which
// address it announces to the servers:
//
//   - an explicit advertise address (WithGossipAdvertise) is announced as
//     given; when the bind address is the default and the advertised host
//     is not loopback, gossip binds every interface so that it is reachable
//     there;
//   - an explicit, specific bind address (WithGossipAddr "10.0.0.7:7946")
//     is also the announced one;
//   - otherwise (the loopback default, or an unspecified "0.0.0.0"/"[::]")
//     the first server that route finds decides: when the local address
//     that reaches it is not loopback, that address is announced (and the
//     default binds it instead of loopback, which the servers could not
//     reach); when the servers are on loopback, loopback is kept.
//
// route returns the local IP that routes to a server address; it is
// injected so that the choice is a pure function.
func chooseGossipPlace(bind string, bindSet bool, advertise string, servers []string, route func(string) (net.IP, error)) (gossipPlace, error) {
	host, port, err := splitPort(bind)
	if err != nil {
		return gossipPlace{}, fmt.Errorf("%w: gossip address %q: %v", client.ErrInvalid, bind, err)
	}
	p := gossipPlace{bindHost: host, bindPort: port}
	unspecified := host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified()
	if advertise != "" {
		ah, ap := advertise, 0
		if strings.Contains(advertise, ":") && net.ParseIP(advertise) == nil {
			if ah, ap, err = splitPort(advertise); err != nil {
				return gossipPlace{}, fmt.Errorf("%w: gossip advertise address %q: %v", client.ErrInvalid, advertise, err)
			}
		}
		p.advHost, p.advPort = ah, ap
		if !bindSet && !isLoopbackHost(ah) {
			p.bindHost = "0.0.0.0"
		}
		return p, nil
	}
	if bindSet && !unspecified {
		p.advHost = host
		return p, nil
	}
	if unspecified {
		p.advHost = "" // memberlist's pick, unless a server says better
	}
	for _, s := range servers {
		ip, err := route(s)
		if err != nil || ip == nil {
			continue
		}
		switch {
		case ip.IsLoopback() && !bindSet:
			p.advHost = host
		case ip.IsLoopback():
			p.advHost = "127.0.0.1"
		default:
			p.advHost = ip.String()
			if !bindSet {
				p.bindHost = p.advHost // that interface only, not every one
			}
		}
		return p, nil
	}
	if !unspecified {
		p.advHost = host
	}
	return p, nil
}

func splitPort(addr string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port %q is not a number in [0, 65535]", portStr)
	}
	return host, port, nil
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// serverHostPort turns a server address as Config.Addresses or WithJoin
// take it ("host:port", "http://host:port") into "host:port".
func serverHostPort(addr string) string {
	if strings.Contains(addr, "://") {
		if u, err := url.Parse(addr); err == nil {
			addr = u.Host
		}
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, "7946")
	}
	return addr
}

// routedIP is the local IP of the interface that routes to server: a UDP
// socket "connected" to it learns its local address from the routing
// table; no packet is sent.
func routedIP(server string) (net.IP, error) {
	conn, err := net.Dial("udp", serverHostPort(server))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	a, ok := conn.LocalAddr().(*net.UDPAddr)
	if !ok {
		return nil, fmt.Errorf("local address %v is not UDP", conn.LocalAddr())
	}
	return a.IP, nil
}
