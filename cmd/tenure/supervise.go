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

// defaultGrace is the default time between SIGTERM and SIGKILL when the
// lease is lost; it is lowered to maxGrace(TTL) for a TTL too short for it.
const defaultGrace = time.Second

// maxGrace is the longest grace that a lease of ttl leaves room for: the
// margin, leaseMargin(ttl, grace), may be at most TTL/2.
func maxGrace(ttl time.Duration) time.Duration { return max(ttl/2-client.DefaultMargin(ttl), 0) }

// leaseMargin is the margin of the lease of lock and elect: grace, plus
// the margin a lease of the TTL has by default, for clock rate differences
// and timer delays up to the SIGKILL. The lease ends locally, and the
// command gets SIGTERM, at SentAt + TTL − margin, where SentAt is when
// tenure sent its last successful acquire or renewal; the SIGKILL follows
// grace later, before the cluster can free the key (SentAt + TTL).
func leaseMargin(ttl, grace time.Duration) time.Duration { return grace + client.DefaultMargin(ttl) }

// supervisorFlags are the flags that lock and elect share.
type supervisorFlags struct {
	cluster clusterFlags // its -json is not registered
	ttl     time.Duration
	holder  string
	grace   time.Duration
	meta    metaFlag
	log     logOutput
}

func (f *supervisorFlags) register(fs *flag.FlagSet) {
	f.meta = metaFlag{}
	f.cluster.registerServers(fs)
	fs.DurationVar(&f.ttl, "ttl", client.DefaultLeaseTTL, "lifetime of the lease: the key frees at most this long after tenure dies")
	fs.StringVar(&f.holder, "holder", "", "holder identity (default: hostname-pid-random)")
	fs.DurationVar(&f.grace, "grace", defaultGrace, "time between SIGTERM and SIGKILL when the lease is lost; at most TTL/2 - max(TTL/10, 100ms) (lowered to that when not given)")
	fs.Var(f.meta, "meta", "metadata entry key=value stored with the lease (repeatable)")
	fs.Var(&f.log.level, "log-level", "`level` of tenure's own lines on stderr: trace, debug, info, warn or error")
	fs.Var(&f.log.format, "log-format", "`format` of tenure's own lines on stderr: text (the default) or json (one JSON object per line)")
	// Empty defaults, so that no usage message prints the secret.
	fs.StringVar(&f.cluster.token, "token", "", "ACL token secret sent with every request (default $"+client.EnvHTTPToken+")")
	fs.StringVar(&f.cluster.token, "acl-token", "", "same as -token")
}

// check validates the flags once fs has parsed them, and sets the default
// grace for the TTL. It returns what is wrong, naming the flag, or "".
func (f *supervisorFlags) check(fs *flag.FlagSet) string {
	switch {
	case f.ttl <= 0:
		return fmt.Sprintf("-ttl must be positive, got %v", f.ttl)
	case f.grace < 0:
		return fmt.Sprintf("-grace must not be negative, got %v", f.grace)
	case !given(fs, "grace"):
		f.grace = min(defaultGrace, maxGrace(f.ttl))
	case f.grace > maxGrace(f.ttl):
		return fmt.Sprintf("-grace must be at most TTL/2 - max(TTL/10, 100ms) = %v with -ttl %v, got %v: the command must be killed before the cluster can free the key",
			maxGrace(f.ttl), f.ttl, f.grace)
	}
	return ""
}

// client returns a client and a logger for the flags.
func (f *supervisorFlags) client(stderr io.Writer) (*client.Client, hclog.Logger, error) {
	log := f.log.logger("tenure", stderr)
	cfg := f.cluster.config()
	cfg.Holder = f.holder
	cfg.Logger = log
	c, err := client.New(cfg)
	return c, log, err
}

// leaseOptions are the options of the lease for the flags.
func (f *supervisorFlags) leaseOptions(log hclog.Logger) []client.LeaseOption {
	opts := []client.LeaseOption{client.WithTTL(f.ttl), client.WithMargin(leaseMargin(f.ttl, f.grace)), client.WithLogger(log)}
	if len(f.meta) > 0 {
		opts = append(opts, client.WithMetadata(f.meta))
	}
	return opts
}

// parseSupervised parses "flags NAME -- command args" of lock and elect:
// the flags into fs, checked by f, one positional NAME, and a command
// after "--". When ok is false the usage was printed and code is the exit
// status.
func (e *env) parseSupervised(fs *flag.FlagSet, f *supervisorFlags, args []string) (name string, command []string, code int, ok bool) {
	before, command, ok := splitCommand(args)
	if !ok {
		if _, code, ok := e.parse(fs, args, 0, -1); !ok {
			return "", nil, code, false // -h, or a bad flag
		}
		return "", nil, e.usageError(fs, "the command to run must follow --"), false
	}
	pos, code, ok := e.parse(fs, before, 1, 1)
	if !ok {
		return "", nil, code, false
	}
	if msg := f.check(fs); msg != "" {
		return "", nil, e.usageError(fs, msg), false
	}
	// A command that cannot start fails before anything is acquired: a
	// lease or a leadership taken for it would only burn a token.
	if _, err := exec.LookPath(command[0]); err != nil {
		fmt.Fprintf(e.stderr, "error: cannot run %s: %v; nothing acquired\n", shellWord(command[0]), err)
		return "", nil, exitCannotRun, false
	}
	return pos[0], command, 0, true
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
// and SIGKILL grace after the lease's local deadline (or after the
// cluster's refusal, when that came first) if the command still runs: the
// lease's margin (leaseMargin) is longer than grace, so the SIGKILL lands
// before the cluster can free the key. When the command has exited, what
// it left running in its group is killed (on Unix). supervise returns then;
// it does not release the lease.
//
// A lease that has ended already is not run under: the command is not
// started, and the outcome is lost with status exitLost.
func (e *env) supervise(ctx context.Context, sigs <-chan os.Signal, log hclog.Logger, lease *client.Lease, command []string, grace time.Duration) outcome {
	// The margin was made for the TTL asked for; a lease granted with a
	// shorter one has a margin of at most its TTL/2, so the grace must fit
	// in that.
	grace = min(grace, maxGrace(lease.TTL()))
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = append(os.Environ(),
		envKey+"="+lease.Key(),
		envToken+"="+strconv.FormatUint(lease.Token(), 10),
		envHolder+"="+lease.Holder())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, e.stdout, e.stderr
	cmd.SysProcAttr = childProcAttr()
	cmd.WaitDelay = time.Second // output pipes held open by grandchildren
	if err := lease.Err(); err != nil {
		// Lost between the acquisition and now (e.g. tenure was paused):
		// the command would run without the lease.
		log.Error("lease lost before the command started: not starting it", "key", lease.Key(), "token", lease.Token(), "error", err)
		return outcome{code: exitLost, lost: true}
	}
	if err := cmd.Start(); err != nil {
		log.Error("cannot start the command", "command", fmtCommand(command), "error", err)
		return outcome{code: exitCannotRun}
	}
	log.Debug("command started", "pid", cmd.Process.Pid, "command", fmtCommand(command))
	exited := make(chan struct{})
	go func() {
		waitCommand(cmd)
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
			// SIGKILL grace after the local deadline, which the cluster's
			// earliest expiry follows by more than grace; or grace from now
			// when the cluster refused the lease before its deadline.
			killAt := time.Now().Add(grace)
			if dl := lease.Deadline().Add(grace); dl.Before(killAt) {
				killAt = dl
			}
			log.Error("lease lost: stopping the command", "key", lease.Key(), "token", lease.Token(), "error", lease.Err(), "kill_in", time.Until(killAt).Round(time.Millisecond))
			signalGroup(cmd.Process, termSignal)
			kill = time.After(time.Until(killAt))
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
	words := make([]string, len(command))
	for i, w := range command {
		words[i] = shellWord(w)
	}
	return strings.Join(words, " ")
}

// shellWord is w as a POSIX shell reads it back: as it is when it holds
// only characters no shell treats specially, else in single quotes (a
// single quote inside ends them, is escaped, and opens them again). The
// log's own quoting then adds none of its escapes, as Go's %q did.
func shellWord(w string) string {
	if w != "" && strings.IndexFunc(w, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./=:,@%+", r))
	}) < 0 {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
