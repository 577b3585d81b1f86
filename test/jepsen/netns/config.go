//go:build linux

package netns

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Config of a test network.
type Config struct {
	// Prefix of the namespace names: nodes are Prefix+"-"+node, the hub is
	// Prefix+"-hub". Keep it short and include the owner's pid (for
	// example "tnj12345") so that concurrent runs never collide.
	Prefix string
	// Subnet is the first three octets of a /24, for example "10.201.7".
	// Nodes get .1, .2, ... in the order of Nodes; the hub gets .254.
	Subnet string
	// Nodes names the nodes, for example "n1", "n2", "n3", "w1".
	Nodes []string
	// Log may be nil.
	Log hclog.Logger
}

func newNet(cfg Config) (*Net, error) {
	if !validName(cfg.Prefix) {
		return nil, fmt.Errorf("invalid prefix %q: want 1 to 32 letters, digits, '-', '_' or '.'", cfg.Prefix)
	}
	if len(cfg.Nodes) == 0 || len(cfg.Nodes) > 253 {
		return nil, fmt.Errorf("need 1 to 253 nodes, got %d", len(cfg.Nodes))
	}
	hub, err := netip.ParseAddr(cfg.Subnet + ".254")
	if err != nil || !hub.Is4() || strings.Count(cfg.Subnet, ".") != 2 {
		return nil, fmt.Errorf("invalid subnet %q: want the first three octets of a /24", cfg.Subnet)
	}
	log := cfg.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	n := &Net{
		log:      log.Named("netns"),
		prefix:   cfg.Prefix,
		hubNS:    cfg.Prefix + "-hub",
		hubIP:    hub.String(),
		nodes:    make(map[string]*node, len(cfg.Nodes)),
		drops:    make(map[string]map[string]bool),
		shapes:   make(map[string]Shaping),
		links:    make(map[string]map[string]time.Duration),
		delayers: make(map[string]*delayer),
	}
	n.hub = &node{name: "hub", ns: n.hubNS, addr: n.hubIP, index: 254}
	for i, name := range cfg.Nodes {
		if !validName(name) || name == "hub" {
			return nil, fmt.Errorf("invalid node name %q: want 1 to 32 letters, digits, '-', '_' or '.', not \"hub\"", name)
		}
		if _, dup := n.nodes[name]; dup {
			return nil, fmt.Errorf("duplicate node %q", name)
		}
		veth := "v-" + name
		if len(veth) > 15 {
			veth = fmt.Sprintf("v%d", i+1)
		}
		n.nodes[name] = &node{
			name:  name,
			ns:    cfg.Prefix + "-" + name,
			addr:  fmt.Sprintf("%s.%d", cfg.Subnet, i+1),
			veth:  veth,
			index: i + 1,
		}
		n.order = append(n.order, name)
	}
	return n, nil
}

// validName reports whether s may be part of the name of a namespace and
// of an interface.
func validName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		if !ok {
			return false
		}
	}
	return true
}
