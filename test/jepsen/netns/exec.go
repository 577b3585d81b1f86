//go:build linux

package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// commandTimeout bounds every ip, iptables and tc run of the package.
const commandTimeout = 30 * time.Second

// run runs a command and returns its output.
func run(name string, args ...string) (string, error) { return runIn("", name, args...) }

// runIn runs a command with stdin and returns its combined output; the
// error quotes the command and its output.
func runIn(stdin, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// inNamespace runs fn on an OS thread that has joined network namespace ns
// and returns its error. Sockets fn creates belong to ns for good and may
// be used from any goroutine afterwards. If the thread cannot get back to
// its original namespace it is never unlocked, so the runtime ends it with
// the goroutine instead of reusing it.
func inNamespace(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restored := false
		defer func() {
			if restored {
				runtime.UnlockOSThread()
			}
		}()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			restored = true
			errc <- fmt.Errorf("open own network namespace: %w", err)
			return
		}
		defer unix.Close(orig)
		target, err := unix.Open(filepath.Join(netnsDir, ns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			restored = true
			errc <- fmt.Errorf("open namespace %s: %w", ns, err)
			return
		}
		err = unix.Setns(target, unix.CLONE_NEWNET)
		unix.Close(target)
		if err != nil {
			restored = true
			errc <- fmt.Errorf("enter namespace %s: %w", ns, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("leave namespace %s: %w", ns, err))
			return
		}
		restored = true
		errc <- ferr
	}()
	return <-errc
}

// Command returns a command that runs name with args inside node's
// namespace, through `ip netns exec`, which execs the program so that the
// pid of the command is the program's. The command gets its own process
// group (kill -pgid stops it with its children) and SIGKILL when the OS
// thread that started it exits. Start fails for an unknown node.
func (n *Net) Command(node, name string, args ...string) *exec.Cmd {
	nd, err := n.node(node)
	ns := ""
	if err == nil {
		ns = nd.ns
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err != nil {
		cmd.Err = err
	}
	return cmd
}

// DialContext dials addr from the hub's namespace. The host of addr should
// be an IP address; a name is resolved in the namespace of the caller.
func (n *Net) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return n.dial(ctx, n.hubNS, network, addr)
}

// DialFrom dials addr from node's namespace.
func (n *Net) DialFrom(ctx context.Context, node, network, addr string) (net.Conn, error) {
	nd, err := n.node(node)
	if err != nil {
		return nil, err
	}
	return n.dial(ctx, nd.ns, network, addr)
}

func (n *Net) dial(ctx context.Context, ns, network, addr string) (net.Conn, error) {
	return openIn(ctx, ns, network, addr, func(addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	})
}

// ListenIn returns a listener created inside node's namespace.
func (n *Net) ListenIn(node, network, addr string) (net.Listener, error) {
	return listenIn(n, node, network, addr, func(lc *net.ListenConfig, addr string) (net.Listener, error) {
		return lc.Listen(context.Background(), network, addr)
	})
}

// ListenPacketIn returns a packet listener (UDP) created inside node's
// namespace.
func (n *Net) ListenPacketIn(node, network, addr string) (net.PacketConn, error) {
	return listenIn(n, node, network, addr, func(lc *net.ListenConfig, addr string) (net.PacketConn, error) {
		return lc.ListenPacket(context.Background(), network, addr)
	})
}

// listenIn opens a listening socket with listen inside node's namespace.
func listenIn[S io.Closer](n *Net, node, network, addr string, listen func(lc *net.ListenConfig, addr string) (S, error)) (S, error) {
	nd, err := n.node(node)
	if err != nil {
		var none S
		return none, err
	}
	return openIn(context.Background(), nd.ns, network, addr, func(addr string) (S, error) {
		return listen(new(net.ListenConfig), addr)
	})
}

// openIn resolves addr outside, then runs open with the result inside the
// namespace ns, so that the socket open makes belongs to ns. A socket
// that comes back with an error is closed, and nil is returned.
func openIn[S io.Closer](ctx context.Context, ns, network, addr string, open func(addr string) (S, error)) (S, error) {
	var none S
	addr, err := resolve(ctx, network, addr)
	if err != nil {
		return none, err
	}
	var s S
	err = inNamespace(ns, func() error {
		var err error
		s, err = open(addr)
		return err
	})
	if err != nil {
		if any(s) != nil {
			s.Close()
		}
		return none, err
	}
	return s, nil
}

// resolve turns the host of addr into an IP address before a namespace is
// entered, so that no resolver goroutine runs outside the locked thread.
func resolve(ctx context.Context, network, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if _, err := netip.ParseAddr(host); err == nil || host == "" {
		return addr, nil
	}
	family := "ip4"
	if strings.HasSuffix(network, "6") {
		family = "ip6"
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, family, host)
	if err != nil {
		return "", err
	}
	if len(ips) == 0 {
		return "", fmt.Errorf("resolve %s: no %s address", host, family)
	}
	return net.JoinHostPort(ips[0].String(), port), nil
}

// HTTPClient returns an HTTP client whose connections are dialed from the
// hub's namespace. It ignores proxy settings of the environment and keeps
// idle connections; timeout bounds each request (0 means none).
func (n *Net) HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         n.DialContext,
			MaxIdleConns:        256,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
		},
	}
}
