//go:build linux

package netns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// netnsDir is where ip(8) keeps the named network namespaces.
const netnsDir = "/run/netns"

// Net is a test network made by Setup. Its methods are safe for concurrent
// use; Close releases it.
type Net struct {
	log    hclog.Logger
	prefix string
	hubNS  string
	hubIP  string
	hub    *node // name "hub"; receives, never sends, shaped traffic
	nodes  map[string]*node
	order  []string
	delay  string // what DelaySupported returns

	mu       sync.Mutex // guards the fields below and serializes faults
	closed   bool
	drops    map[string]map[string]bool // to -> from -> dropped
	shapes   map[string]Shaping
	links    map[string]map[string]time.Duration // to -> from -> delay
	delayers map[string]*delayer                 // by namespace
}

type node struct {
	name  string
	ns    string
	addr  string
	veth  string // the bridge port in the hub
	index int    // 1-based, the last octet of addr
}

// Available returns nil when this process is root and ip and iptables are
// usable, and otherwise an error saying exactly what is missing.
func Available() error {
	var errs []error
	if uid := os.Geteuid(); uid != 0 {
		errs = append(errs, fmt.Errorf("not running as root (euid %d)", uid))
	}
	for _, bin := range []string{"ip", "iptables", "iptables-restore"} {
		if _, err := exec.LookPath(bin); err != nil {
			errs = append(errs, fmt.Errorf("%s not found in PATH: %w", bin, err))
		}
	}
	if len(errs) == 0 {
		if _, err := run("ip", "netns", "list"); err != nil {
			errs = append(errs, err)
		}
		if _, err := run("iptables", "--version"); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("network namespaces unavailable: %w", err)
	}
	return nil
}

// Setup creates the network described by cfg: the hub namespace with its
// bridge and, per node, a namespace with lo up and eth0 on the bridge, and
// the fault chains of every node. On failure it removes whatever it made.
func Setup(cfg Config) (*Net, error) {
	n, err := newNet(cfg)
	if err != nil {
		return nil, fmt.Errorf("netns setup: %w", err)
	}
	if err := n.build(); err != nil {
		if cerr := n.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("undo: %w", cerr))
		}
		return nil, fmt.Errorf("netns setup: %w", err)
	}
	n.log.Info("network ready", "prefix", n.prefix, "hub", n.hubIP, "nodes", n.order, "delay", n.delay)
	return n, nil
}

// namespaces returns every namespace of n, the hub first.
func (n *Net) namespaces() []string {
	nss := []string{n.hubNS}
	for _, name := range n.order {
		nss = append(nss, n.nodes[name].ns)
	}
	return nss
}

func (n *Net) build() error {
	nss := n.namespaces()
	for _, ns := range nss {
		if _, err := os.Lstat(filepath.Join(netnsDir, ns)); err == nil {
			n.closed = true // not ours: Close must not delete it
			return fmt.Errorf("namespace %s already exists", ns)
		}
	}
	for _, ns := range nss {
		if err := writeOwner(ns); err != nil {
			return err
		}
		if _, err := run("ip", "netns", "add", ns); err != nil {
			return err
		}
		// Best effort: no IPv6 chatter (router solicitations, MLD) on the
		// links; the suite speaks IPv4 only.
		_ = n.sysctl(ns, "net/ipv6/conf/default/disable_ipv6", "1")
		_ = n.sysctl(ns, "net/ipv6/conf/all/disable_ipv6", "1")
	}
	if err := n.noBridgeFilter(); err != nil {
		return err
	}
	hub := []string{
		"link set lo up",
		"link add br0 type bridge",
		"addr add " + n.hubIP + "/24 dev br0",
		"link set br0 up",
	}
	for _, name := range n.order {
		nd := n.nodes[name]
		hub = append(hub,
			fmt.Sprintf("link add %s type veth peer name eth0 netns %s", nd.veth, nd.ns),
			fmt.Sprintf("link set %s master br0 up", nd.veth))
	}
	if _, err := runIn(strings.Join(hub, "\n")+"\n", "ip", "-n", n.hubNS, "-batch", "-"); err != nil {
		return err
	}
	if err := eachNode(n.receivers(), func(nd *node) error {
		if nd != n.hub {
			cmds := "link set lo up\naddr add " + nd.addr + "/24 dev eth0\nlink set eth0 up\n"
			if _, err := runIn(cmds, "ip", "-n", nd.ns, "-batch", "-"); err != nil {
				return err
			}
		}
		return n.installChains(nd)
	}); err != nil {
		return err
	}
	n.delay = n.probeDelay()
	return nil
}

// noBridgeFilter keeps br_netfilter, if loaded, from passing bridged
// frames through the hub's iptables.
func (n *Net) noBridgeFilter() error {
	for _, key := range []string{"bridge-nf-call-iptables", "bridge-nf-call-ip6tables", "bridge-nf-call-arptables"} {
		err := n.sysctl(n.hubNS, "net/bridge/"+key, "0")
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// sysctl writes value to /proc/sys/<key> as seen from namespace ns.
func (n *Net) sysctl(ns, key, value string) error {
	return inNamespace(ns, func() error {
		return os.WriteFile(filepath.Join("/proc/sys", key), []byte(value), 0o644)
	})
}

// Close kills every process still inside the namespaces of n, stops the
// delayers, deletes the namespaces and removes their owner files. It is
// idempotent. Sockets made by DialContext, ListenIn and the like that the
// caller still holds keep their namespace alive in the kernel, nameless
// and unreachable, until they are closed.
func (n *Net) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	var errs []error
	for ns, d := range n.delayers {
		d.stop()
		delete(n.delayers, ns)
	}
	for _, ns := range n.namespaces() {
		if err := removeNamespace(ns, n.log); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("netns close: %w", err)
	}
	return nil
}

// Addr returns node's IP address, for example "10.201.7.1", or "" for an
// unknown node.
func (n *Net) Addr(node string) string {
	if nd, ok := n.nodes[node]; ok {
		return nd.addr
	}
	return ""
}

// Hub returns the hub's IP address, for example "10.201.7.254".
func (n *Net) Hub() string { return n.hubIP }

// Namespace returns the name of node's network namespace, or "" for an
// unknown node.
func (n *Net) Namespace(node string) string {
	if nd, ok := n.nodes[node]; ok {
		return nd.ns
	}
	return ""
}

// Nodes returns the node names in Config order.
func (n *Net) Nodes() []string { return append([]string(nil), n.order...) }

// HubNamespace returns the name of the hub's network namespace.
func (n *Net) HubNamespace() string { return n.hubNS }

func (n *Net) node(name string) (*node, error) {
	nd, ok := n.nodes[name]
	if !ok {
		return nil, fmt.Errorf("unknown node %q", name)
	}
	return nd, nil
}

// link returns the nodes from and to of a one-way fault, which must be
// two.
func (n *Net) link(from, to string) (src, dst *node, err error) {
	if src, err = n.node(from); err != nil {
		return nil, nil, err
	}
	if dst, err = n.node(to); err != nil {
		return nil, nil, err
	}
	if src == dst {
		return nil, nil, fmt.Errorf("%s to itself", from)
	}
	return src, dst, nil
}

// nodeList returns the nodes in Config order.
func (n *Net) nodeList() []*node {
	nds := make([]*node, 0, len(n.order))
	for _, name := range n.order {
		nds = append(nds, n.nodes[name])
	}
	return nds
}

// receivers returns the hub and the nodes: every namespace that holds
// shaping rules.
func (n *Net) receivers() []*node { return append([]*node{n.hub}, n.nodeList()...) }

// eachNode runs fn for nds concurrently and joins the errors.
func eachNode(nds []*node, fn func(*node) error) error {
	errs := make([]error, len(nds))
	var wg sync.WaitGroup
	for i, nd := range nds {
		wg.Go(func() { errs[i] = fn(nd) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
