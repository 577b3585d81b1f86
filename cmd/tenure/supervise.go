package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client"
)

// Exit codes of lock and elect besides the command's own.
const (
	// exitLost: the lease was lost while the command ran, and tenure
	// stopped the command (EX_TEMPFAIL of sysexits.h: try again later).
	exitLost = 75
	// exitNotAcquired: lock did not get the lock within -wait.
	exitNotAcquired = 76
	// exitCannotRun: the command could not be started (as a shell's 127).
	exitCannotRun = 127
)

// Environment variables that lock and elect give the command.
const (
	envKey    = "TENURE_KEY"
	envToken  = "TENURE_TOKEN"
	envHolder = "TENURE_HOLDER"
)

// runSupervisor runs lock or elect as the process's command: it catches
// the signals to forward to the command.
func runSupervisor(args []string) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)
	e := &env{stdout: os.Stdout, stderr: os.Stderr}
	if args[0] == "lock" {
		return e.lock(context.Background(), sigs, args[1:])
	}
	return e.elect(context.Background(), sigs, args[1:])
}

// synced returns e with writers that the command's output copiers and
// tenure's logger may share: files are passed through (the command writes
// to the same file descriptor), other writers get a lock.
func (e *env) synced() *env {
	wrap := func(w io.Writer) io.Writer {
		if _, ok := w.(*os.File); ok {
			return w
		}
		return &lockedWriter{w: w}
	}
	return &env{stdout: wrap(e.stdout), stderr: wrap(e.stderr)}
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// supervisorFlags are the flags that lock and elect share.
type supervisorFlags struct {
	httpAddr string
	ttl      time.Duration
	holder   string
	grace    time.Duration
	meta     metaFlag
	logLevel string
}

func (f *supervisorFlags) register(fs *flag.FlagSet) {
	def := os.Getenv(client.EnvHTTPAddr)
	if def == "" {
		def = client.DefaultHTTPAddr
	}
	f.meta = metaFlag{}
	fs.StringVar(&f.httpAddr, "http-addr", def, "HTTP addresses of the servers, comma-separated (env "+client.EnvHTTPAddr+")")
	fs.DurationVar(&f.ttl, "ttl", client.DefaultLeaseTTL, "lifetime of the lease: the key frees at most this long after tenure dies")
	fs.StringVar(&f.holder, "holder", "", "holder identity (default: hostname-pid-random)")
	fs.DurationVar(&f.grace, "grace", 10*time.Second, "time between SIGTERM and SIGKILL when the lease is lost")
	fs.Var(f.meta, "meta", "metadata entry key=value stored with the lease (repeatable)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level of tenure's own lines on stderr: trace, debug, info, warn, error")
}

// client returns a client and a logger for the flags.
func (f *supervisorFlags) client(stderr io.Writer) (*client.Client, hclog.Logger, error) {
	log := hclog.New(&hclog.LoggerOptions{Name: "tenure", Output: stderr, Level: hclog.LevelFromString(f.logLevel)})
	cfg := client.DefaultConfig()
	cfg.Addresses = client.SplitAddresses(f.httpAddr)
	cfg.Holder = f.holder
	cfg.Logger = log
	c, err := client.New(cfg)
	return c, log, err
}

// leaseOptions are the options of the lease for the flags.
func (f *supervisorFlags) leaseOptions(log hclog.Logger) []client.LeaseOption {
	opts := []client.LeaseOption{client.WithTTL(f.ttl), client.WithLogger(log)}
	if len(f.meta) > 0 {
		opts = append(opts, client.WithMetadata(f.meta))
	}
	return opts
}

// splitCommand splits "flags KEY -- command args" at the first "--".
func splitCommand(args []string) (before, command []string, ok bool) {
	for i, a := range args {
		if a == "--" {
			return args[:i], args[i+1:], len(args) > i+1
		}
	}
	return args, nil, false
}

// interruptible runs fn with a context that ends when ctx ends or a signal
// arrives on sigs; it returns the signal, if one ended it. No signal is
// taken from sigs once fn returned.
func interruptible(ctx context.Context, sigs <-chan os.Signal, fn func(ctx context.Context)) os.Signal {
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got os.Signal
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case s := <-sigs:
			got = s
			cancel()
		case <-stop:
		}
	}()
	fn(ictx)
	close(stop)
	<-watched
	return got
}

// outcome is how a supervised command ended.
type outcome struct {
	code      int  // the command's exit status (128+n when killed by signal n)
	lost      bool // the lease was lost while it ran
	signalled bool // tenure was told to stop (signal, or ctx) and passed it on
}

// supervise runs command while lease is held: the command gets TENURE_KEY,
// TENURE_TOKEN and TENURE_HOLDER in its environment and runs in a process
// group of its own. Signals from sigs (and the end of ctx, as SIGTERM) are
// passed on to the group. When the lease is lost the group gets SIGTERM,
// and SIGKILL grace later if it is still running. supervise returns once
// the command has exited; it does not release the lease.
func (e *env) supervise(ctx context.Context, sigs <-chan os.Signal, log hclog.Logger, lease *client.Lease, command []string, grace time.Duration) outcome {
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = append(os.Environ(),
		envKey+"="+lease.Key(),
		envToken+"="+strconv.FormatUint(lease.Token(), 10),
		envHolder+"="+lease.Holder())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, e.stdout, e.stderr
	cmd.SysProcAttr = childProcAttr()
	cmd.WaitDelay = time.Second // output pipes held open by grandchildren
	if err := cmd.Start(); err != nil {
		log.Error("cannot start the command", "command", strings.Join(command, " "), "error", err)
		return outcome{code: exitCannotRun}
	}
	log.Debug("command started", "pid", cmd.Process.Pid, "command", strings.Join(command, " "))
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()

	var (
		o       outcome
		kill    <-chan time.Time
		ctxDone = ctx.Done()
	)
	lost := lease.Done()
	for {
		select {
		case <-exited:
			o.code = exitStatus(cmd.ProcessState)
			if lease.Err() != nil && !errors.Is(lease.Err(), client.ErrReleased) {
				o.lost = true // lost, and the command may have run without it
			}
			log.Debug("command exited", "status", o.code)
			return o
		case <-lost:
			lost = nil
			o.lost = true
			log.Error("lease lost: stopping the command", "key", lease.Key(), "token", lease.Token(), "error", lease.Err(), "grace", grace)
			signalGroup(cmd.Process, termSignal)
			kill = time.After(grace)
		case <-kill:
			kill = nil
			log.Error("the command is still running after the grace period: killing it", "grace", grace)
			killGroup(cmd.Process)
		case s := <-sigs:
			o.signalled = true
			log.Info("passing the signal on to the command", "signal", s)
			signalGroup(cmd.Process, s)
		case <-ctxDone:
			ctxDone = nil
			o.signalled = true
			signalGroup(cmd.Process, termSignal)
		}
	}
}

// release hands a lease back after its command ended, logging a failure.
func release(log hclog.Logger, lease *client.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := lease.Release(ctx); err != nil {
		log.Warn("release failed; the lease frees itself after its TTL", "key", lease.Key(), "error", err)
	}
}

// interruptedCode is the exit status of a command interrupted by s before
// it ran its child: 128+n as a shell reports it, 130 (SIGINT) when the
// interruption came from ctx.
func interruptedCode(s os.Signal) int {
	if n, ok := signalNumber(s); ok {
		return 128 + n
	}
	return 130
}

// fmtCommand renders command for messages.
func fmtCommand(command []string) string {
	return fmt.Sprintf("%q", strings.Join(command, " "))
}
