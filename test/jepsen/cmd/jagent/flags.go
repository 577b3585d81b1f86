package main

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/hashicorp/go-hclog"
)

// commonFlags are the flags every workload takes.
type commonFlags struct {
	servers  string
	history  string
	name     string
	duration time.Duration
	seed     uint64
	logLevel string

	seedSet bool
	urls    []string // parsed -servers
}

// register adds the common flags to fs. Whether -name is required is the
// subcommand's business: it is the Proc prefix of the register workload,
// while the holder workloads name their process with -id.
func (f *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.servers, "servers", "", "comma-separated base URLs of the tenure servers, e.g. http://10.201.7.1:7000 (required)")
	fs.StringVar(&f.history, "history", "", "history file to append events to (required)")
	fs.StringVar(&f.name, "name", "", "process name")
	fs.DurationVar(&f.duration, "duration", 0, "stop after this long (0: run until SIGTERM or SIGINT)")
	fs.Uint64Var(&f.seed, "seed", 0, "seed of every random choice (default: random, logged)")
	fs.StringVar(&f.logLevel, "log-level", "info", "level of the log on stderr: trace, debug, info, warn or error")
}

// check validates the common flags once fs has parsed them.
func (f *commonFlags) check(fs *flag.FlagSet) error {
	fs.Visit(func(fl *flag.Flag) { f.seedSet = f.seedSet || fl.Name == "seed" })
	if !f.seedSet {
		f.seed = rand.Uint64()
	}
	urls, err := parseServers(f.servers)
	if err != nil {
		return fmt.Errorf("-servers: %w", err)
	}
	f.urls = urls
	if f.history == "" {
		return errors.New("-history is required")
	}
	if f.duration < 0 {
		return fmt.Errorf("-duration must not be negative, got %v", f.duration)
	}
	if hclog.LevelFromString(f.logLevel) == hclog.NoLevel {
		return fmt.Errorf("-log-level: unknown level %q", f.logLevel)
	}
	return nil
}

// runContext is ctx bounded by -duration, if set.
func (f *commonFlags) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if f.duration > 0 {
		return context.WithTimeout(ctx, f.duration)
	}
	return context.WithCancel(ctx)
}

// newFlagSet returns a flag set that reports errors to stderr, with the
// usage line given.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: jagent %s %s\n\nFlags:\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args into fs, then runs check. It returns exitOK and
// false for -h, exitUsage and false for a bad command line (after saying
// why, naming the flag), and true when the subcommand may run.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer, check func() error) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false // the flag package has said why
	}
	err := check()
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintf(stderr, "jagent %s: %v\n", fs.Name(), err)
		fs.Usage()
		return exitUsage, false
	}
	return exitOK, true
}

// parseChecked is parseFlags with the check of the workload's flag group
// f (its common or holder flags) before the subcommand's own check.
func parseChecked(fs *flag.FlagSet, args []string, stderr io.Writer, f interface{ check(*flag.FlagSet) error }, check func() error) (int, bool) {
	return parseFlags(fs, args, stderr, func() error {
		if err := f.check(fs); err != nil {
			return err
		}
		return check()
	})
}

// parseServers splits a comma-separated list of server addresses, each
// "http://host:port", "https://host:port" or "host:port", into base URLs
// with a scheme and without a trailing slash.
func parseServers(s string) ([]string, error) {
	var out []string
	for _, a := range splitList(s) {
		if !strings.Contains(a, "://") {
			a = "http://" + a
		}
		u, err := url.Parse(a)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", a, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
			return nil, fmt.Errorf("%q: want http://host:port", a)
		}
		out = append(out, u.Scheme+"://"+u.Host)
	}
	if len(out) == 0 {
		return nil, errors.New("at least one server is required")
	}
	return out, nil
}

// splitList splits a comma-separated list, dropping blanks. The agent's
// lists are addresses and key names, which hold no spaces.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
}

// positive returns an error naming flag unless d > 0.
func positive(flag string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("-%s must be positive, got %v", flag, d)
	}
	return nil
}

// newLogger returns the human-readable log of the agent on stderr.
func newLogger(stderr io.Writer, name, level string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Output:     stderr,
		Level:      hclog.LevelFromString(level),
		TimeFormat: "2006-01-02T15:04:05.000000Z07:00",
	})
}

// newRand returns the generator of one stream of random choices: streams
// of one seed are independent of each other and reproducible.
func newRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream))
}

// between returns a uniformly random duration in [lo, hi].
func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

// newNonce returns 8 hex digits that differ between runs of the agent,
// whatever the seed: holders made from it are never reused by an agent
// restarted with the same command line.
func newNonce() string {
	b := make([]byte, 4)
	_, _ = crand.Read(b) // never fails on Linux
	return hex.EncodeToString(b)
}

// sleepCtx waits d, or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
