package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/test/jepsen/history"
)

// holderFlags are the flags shared by the workloads that hold leases with
// the client package: mutex, elect and place.
type holderFlags struct {
	commonFlags
	id      string
	ttl     time.Duration
	timeout time.Duration
}

func (f *holderFlags) register(fs *flag.FlagSet) {
	f.commonFlags.register(fs)
	fs.StringVar(&f.id, "id", "", "process id: the Proc of its events and the prefix of its holders (required)")
	fs.DurationVar(&f.ttl, "ttl", 2*time.Second, "TTL of the leases")
	fs.DurationVar(&f.timeout, "timeout", time.Second, "time limit of one request attempt of the client (and of one store request)")
}

// check validates the flags once fs has parsed them; -name defaults to
// -id and only names the log.
func (f *holderFlags) check(fs *flag.FlagSet) error {
	if err := f.commonFlags.check(fs); err != nil {
		return err
	}
	if f.id == "" {
		return errors.New("-id is required")
	}
	if f.name == "" {
		f.name = f.id
	}
	if err := positive("ttl", f.ttl); err != nil {
		return err
	}
	return positive("timeout", f.timeout)
}

// newClient returns a client of the servers whose attempts are bounded by
// timeout, logging to log.
func newClient(servers []string, timeout time.Duration, log hclog.Logger) (*client.Client, error) {
	cfg := client.DefaultConfig()
	cfg.Addresses = servers
	cfg.Timeout = timeout
	cfg.RetryMaxDelay = time.Second
	cfg.Logger = log.Named("client")
	c, err := client.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return c, nil
}

// holders names the holders of one process: "<id>#<nonce>.<n>", n counting
// the acquisitions from 1. The nonce differs from one run of the agent to
// the next, so a process started again after SIGKILL never acquires under
// a holder of its previous run (the cluster would hand it that run's lease
// as if it were a retry).
type holders struct {
	prefix string
	n      int
}

func newHolders(id string) *holders { return &holders{prefix: id + "#" + newNonce() + "."} }

// next returns a holder never used before.
func (h *holders) next() string {
	h.n++
	return fmt.Sprintf("%s%d", h.prefix, h.n)
}

// leaseHooks records the life of a client lease as events of proc:
// Acquired and Renewed with the lease's local deadline, Lost with why.
// Release is not a hook: the workload records Released itself, with T read
// before it sends the release.
func leaseHooks(rec *recorder, proc string) client.Hooks {
	ev := func(kind string, l *client.Lease) history.Event {
		return history.Event{Kind: kind, Proc: proc, Key: l.Key(), Holder: l.Holder(), Token: l.Token(), TTL: int64(l.TTL())}
	}
	return client.Hooks{
		OnAcquired: func(l *client.Lease) {
			e := ev(history.Acquired, l)
			e.Deadline = history.Mono(l.Deadline())
			_ = rec.Write(e)
		},
		OnRenewed: func(l *client.Lease, _ time.Duration) {
			e := ev(history.Renewed, l)
			e.Deadline = history.Mono(l.Deadline())
			_ = rec.Write(e)
		},
		OnLost: func(l *client.Lease, err error) {
			e := ev(history.Lost, l)
			e.Err = err.Error()
			_ = rec.Write(e)
		},
	}
}

// believe records that proc believes, at the instant it returns to its
// caller, that it holds l: it reads the clock, then the deadline, and only
// then asks the lease whether it is still held. It reports false, writing
// nothing, when the lease has ended (its OnLost hook, if any, recorded
// it). Because the clock is read first, T is never later than the moment
// Err confirmed the lease; and because a deadline that has passed is never
// moved forward, T is before the recorded Deadline.
func believe(rec *recorder, proc string, l *client.Lease) bool {
	t := history.Now()
	dl := l.Deadline()
	if l.Err() != nil {
		return false
	}
	_ = rec.Write(history.Event{T: t, Kind: history.Belief, Proc: proc, Key: l.Key(), Holder: l.Holder(),
		Token: l.Token(), Deadline: history.Mono(dl)})
	return true
}

// released records that proc stops using l and is about to release it: T
// is read before the release is sent. A lost lease is recorded too: the
// release may still free it on the cluster (a lease an operator ended is
// held there until its deadline, and freed by its holder's release), and
// the holder has stopped by now. It writes nothing, and reports false,
// when the lease was released already.
func released(rec *recorder, proc string, l *client.Lease) bool {
	t := history.Now()
	if errors.Is(l.Err(), client.ErrReleased) {
		return false
	}
	_ = rec.Write(history.Event{T: t, Kind: history.Released, Proc: proc, Key: l.Key(), Holder: l.Holder(), Token: l.Token()})
	return true
}

// stopHolder closes the history and logs the stop; it returns exitError
// when the history could not be closed, else exitOK.
func stopHolder(log hclog.Logger, rec *recorder) int {
	if err := rec.Close(); err != nil {
		log.Error("closing the history failed", "error", err)
		return exitError
	}
	log.Info("stopped")
	return exitOK
}

// holderProc is what a lease-holding process of the elect and mutex
// workloads runs with: its id and TTL, a client of the servers, its
// history and log, its random source (seeded by -seed) and the holder
// names it takes.
type holderProc struct {
	id      string
	ttl     time.Duration
	c       *client.Client
	rec     *recorder
	log     hclog.Logger
	rng     *rand.Rand
	holders *holders
}

// newHolderProc returns the holderProc of the flags hf, with what
// startHolder opened.
func newHolderProc(hf holderFlags, log hclog.Logger, rec *recorder, c *client.Client) holderProc {
	return holderProc{id: hf.id, ttl: hf.ttl, c: c, rec: rec, log: log, rng: newRand(hf.seed, 0), holders: newHolders(hf.id)}
}

// runHolder is the frame of a holder workload's subcommand: it parses
// args into fs, checking hf and then the subcommand's check, opens the
// log, the history and the client, and calls run with a context that
// ends with ctx or after -duration. An exit status of run other than
// exitOK is returned as it is; else the history is closed, and
// stopHolder's status returned.
func runHolder(ctx context.Context, fs *flag.FlagSet, args []string, stderr io.Writer, hf *holderFlags, check func() error,
	run func(ctx context.Context, log hclog.Logger, rec *recorder, c *client.Client) int) int {
	code, ok := parseChecked(fs, args, stderr, hf, check)
	if !ok {
		return code
	}
	log, rec, c, ok := startHolder(*hf, stderr, fs.Name())
	if !ok {
		return exitError
	}
	defer rec.Close()
	ctx, cancel := hf.runContext(ctx)
	defer cancel()
	if code := run(ctx, log, rec, c); code != exitOK {
		return code
	}
	return stopHolder(log, rec)
}

// startHolder opens what every holder workload needs: its logger, its
// history and a client of the servers. It logs why it could not; the
// caller closes the recorder.
func startHolder(hf holderFlags, stderr io.Writer, kind string) (hclog.Logger, *recorder, *client.Client, bool) {
	log := newLogger(stderr, "jagent."+kind+"."+hf.name, hf.logLevel)
	rec, err := openRecorder(hf.history, log)
	if err != nil {
		log.Error("cannot start", "error", err)
		return nil, nil, nil, false
	}
	c, err := newClient(hf.urls, hf.timeout, log)
	if err != nil {
		rec.Close()
		log.Error("cannot start", "error", err)
		return nil, nil, nil, false
	}
	return log, rec, c, true
}
