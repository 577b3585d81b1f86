package jepsen

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// proc is one process of the run: a server, a worker or the store, always
// started inside its own network namespace. Its output is appended to
// logPath across restarts.
type proc struct {
	name    string // also its namespace's node name
	role    string // server, register, mutex, elect, place, store
	bin     string
	args    []string
	env     []string
	logPath string
	dataDir string // servers only
	history string // agents only

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
	starts int
}

// running reports whether the process was started and has not exited.
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// start runs cmd (made by the network for p's namespace).
func (p *proc) start(cmd *exec.Cmd) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.exited:
		default:
			return fmt.Errorf("%s: already running", p.name)
		}
	}
	f, err := os.OpenFile(p.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "==== start %d of %s at %s\n", p.starts+1, p.name, time.Now().Format(time.RFC3339Nano))
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), p.env...)
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		f.Close()
		close(exited)
	}()
	p.cmd, p.exited, p.paused = cmd, exited, false
	p.starts++
	return nil
}

// signal sends sig to the process; no error when it is not running. The
// os.Process handle (a pidfd) never signals a process that reused the pid.
func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil || !p.running() {
		return nil
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%s %s: %w", sig, p.name, err)
	}
	return nil
}

func (p *proc) pause() error {
	p.mu.Lock()
	p.paused = true
	p.mu.Unlock()
	return p.signal(syscall.SIGSTOP)
}

func (p *proc) resume() error {
	p.mu.Lock()
	was := p.paused
	p.paused = false
	p.mu.Unlock()
	if !was {
		return nil
	}
	return p.signal(syscall.SIGCONT)
}

// kill sends SIGKILL and waits for the exit.
func (p *proc) kill() error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	return p.wait(10 * time.Second)
}

// stop asks for a clean exit (SIGCONT first, in case it is paused), and
// kills the process when it has not exited after grace.
func (p *proc) stop(grace time.Duration) error {
	if !p.running() {
		return nil
	}
	p.signal(syscall.SIGCONT)
	if err := p.signal(syscall.SIGTERM); err != nil {
		return err
	}
	if p.wait(grace) == nil {
		return nil
	}
	return p.kill()
}

func (p *proc) wait(d time.Duration) error {
	p.mu.Lock()
	ch := p.exited
	p.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-time.After(d):
		return fmt.Errorf("%s did not exit within %v", p.name, d)
	}
}
