// Package bench is the side-by-side benchmark of tenure against etcd: it
// starts a three-node cluster of each on loopback, runs the same workloads
// against both, alternating, and reports medians and ratios. The command is
// cmd/benchcompare; `make bench-compare` runs it in full, `make test` runs
// it briefly against tenure alone.
//
// It is a module of its own so that the etcd client is a dependency of the
// benchmark only, never of tenure.
package bench

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// proc is one server process the harness started.
type proc struct {
	name string
	args []string
	bin  string
	log  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// procs tracks every process the harness starts, so that all are killed
// at the end, on failure and on interrupt.
type procs struct {
	mu  sync.Mutex
	all []*proc
}

func (ps *procs) add(p *proc) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.all = append(ps.all, p)
}

// killAll kills every running process (SIGKILL to its process group) and
// waits for it.
func (ps *procs) killAll() {
	ps.mu.Lock()
	all := append([]*proc(nil), ps.all...)
	ps.mu.Unlock()
	for _, p := range all {
		p.kill()
	}
}

// start starts the process with its output appended to its log file, in a
// process group of its own (so that a Ctrl-C on the terminal reaches the
// harness, which then kills it, rather than the server directly).
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s: already running", p.name)
	}
	out, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("%s: start %s: %w", p.name, p.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return nil
}

// kill sends SIGKILL (kill -9) and waits until the process has exited.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd, p.done = nil, nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
	<-done
}

// running says whether the process is started and has not exited.
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// pid is the process id, 0 when not running.
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// tail returns the last lines of the process's log, for error messages.
func (p *proc) tail() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}

// freePorts returns n distinct free TCP ports on 127.0.0.1 (each also free
// for UDP, as tenure's gossip needs both).
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n && tries < 100*n; tries++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			l.Close()
			continue
		}
		u.Close()
		ls = append(ls, l)
		ports = append(ports, port)
	}
	if len(ports) < n {
		return nil, errors.New("no free ports on 127.0.0.1")
	}
	return ports, nil
}

// Usage reports err, a mistake in the command line of the command name,
// with the flags' usage, and returns its exit code, 2.
func Usage(name string, err error) int {
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	flag.Usage()
	return 2
}

// Fail reports err, which ended the command name, and returns its exit
// code, 1.
func Fail(name string, err error) int {
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	return 1
}
