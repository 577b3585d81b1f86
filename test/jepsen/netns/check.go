//go:build linux

package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"
)

// checkDialTimeout bounds each dial of CheckConnectivity, whatever the
// deadline of its context.
const checkDialTimeout = 2 * time.Second

// CheckConnectivity checks TCP connectivity: for each node it listens on
// Addr(node):0 inside the node's namespace and dials that from every other
// node's namespace and from the hub. It returns an error naming every pair
// that failed. Faults in force make it fail, so call it on a healed
// network. It is bounded by ctx, and each dial by two seconds.
func (n *Net) CheckConnectivity(ctx context.Context) error {
	type pair struct{ from, to string }
	var (
		mu       sync.Mutex
		failures = map[pair]error{}
		wg       sync.WaitGroup
	)
	fail := func(p pair, err error) {
		mu.Lock()
		failures[p] = err
		mu.Unlock()
	}
	targets := make(map[string]string, len(n.order))
	for _, to := range n.order {
		l, err := n.ListenIn(to, "tcp4", net.JoinHostPort(n.Addr(to), "0"))
		if err != nil {
			return fmt.Errorf("connectivity check: listen in %s: %w", to, err)
		}
		defer l.Close()
		go acceptAndClose(l)
		targets[to] = l.Addr().String()
	}
	for _, to := range n.order {
		target := targets[to]
		for _, from := range append([]string{"hub"}, n.order...) {
			if from == to {
				continue
			}
			wg.Go(func() {
				dctx, cancel := context.WithTimeout(ctx, checkDialTimeout)
				defer cancel()
				var c net.Conn
				var err error
				if from == "hub" {
					c, err = n.DialContext(dctx, "tcp4", target)
				} else {
					c, err = n.DialFrom(dctx, from, "tcp4", target)
				}
				if err != nil {
					fail(pair{from, to}, err)
					return
				}
				c.Close()
			})
		}
	}
	wg.Wait()
	if len(failures) == 0 {
		return nil
	}
	var lines []string
	for p, err := range failures {
		lines = append(lines, fmt.Sprintf("%s->%s (%s): %v", p.from, p.to, n.Addr(p.to), err))
	}
	sort.Strings(lines)
	err := errors.New(strings.Join(lines, "; "))
	return fmt.Errorf("connectivity check: %d pairs cannot connect (drop rules or shaping in force? "+
		"otherwise check the host firewall and bridge netfilter, bridge-nf-call-iptables in namespace %s): %w",
		len(failures), n.hubNS, err)
}

func acceptAndClose(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}
