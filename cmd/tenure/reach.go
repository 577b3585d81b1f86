package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client"
)

// unreachableAfter is how long the servers may stay out of reach before a
// command says so. The client keeps retrying them (for up to its timeout;
// lock and elect for as long as they wait): without a word that looks like
// a hang.
const unreachableAfter = time.Second

// reachWatch follows the connections a command's client makes (through
// httptrace on the command's context) and reports when none could be
// made for unreachableAfter, and when one is made again after that.
type reachWatch struct {
	// lost is called once the servers have been out of reach for
	// unreachableAfter, with the last failure (nil: connecting has not
	// ended yet); found when a connection is made after that. Called from
	// a timer's goroutine or the client's.
	lost  func(err error)
	found func()

	mu    sync.Mutex
	timer *time.Timer // runs while out of reach and not yet said
	err   error       // the last failure to connect
	said  bool        // lost was called, found not yet
	// stopped: the command is done; nothing more is said.
	stopped bool
}

// watchReach returns ctx with w's hooks: the HTTP requests made with it
// (and with contexts derived from it) report their connections to w.
// Call stop once the command is done: w says nothing after it.
func (w *reachWatch) watchReach(ctx context.Context) (watched context.Context, stop func()) {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		DNSDone: func(i httptrace.DNSDoneInfo) {
			if i.Err != nil {
				w.failed(i.Err)
			}
		},
		ConnectStart: func(string, string) { w.failed(nil) },
		ConnectDone: func(_, _ string, err error) {
			if err != nil {
				w.failed(err)
				return
			}
			w.reached()
		},
		GotConn: func(httptrace.GotConnInfo) { w.reached() },
	}), w.stop
}

// stop ends the watch.
func (w *reachWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

// failed notes a connection that is being tried (err nil) or failed.
func (w *reachWatch) failed(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.err = err
	}
	if w.timer == nil && !w.said && !w.stopped {
		w.timer = time.AfterFunc(unreachableAfter, w.expired)
	}
}

// expired runs when the servers have been out of reach for
// unreachableAfter. It says so under w.mu, so that nothing is said after
// stop.
func (w *reachWatch) expired() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer == nil || w.said || w.stopped {
		return
	}
	w.timer, w.said = nil, true
	w.lost(w.err)
}

// reached notes a connection made.
func (w *reachWatch) reached() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if w.said && !w.stopped {
		w.found()
	}
	w.said, w.err = false, nil
}

// unreachableText is what a command says while no server can be reached.
func unreachableText(err error, until string) string {
	cause := "connecting has not completed"
	if err != nil {
		cause = err.Error()
	}
	return fmt.Sprintf("no server reachable yet (%s); still trying %s. Is a server running there? -http-addr or %s sets the addresses",
		cause, until, client.EnvHTTPAddr)
}

// watchCommand returns ctx watched for a command that prints to stderr:
// it says, once, when no server has been reachable for a second.
func watchCommand(ctx context.Context, stderr io.Writer, timeout time.Duration) (context.Context, func()) {
	w := &reachWatch{
		lost: func(err error) {
			fmt.Fprintf(stderr, "warning: %s\n", unreachableText(err, fmt.Sprintf("for up to %v", timeout)))
		},
		found: func() {},
	}
	return w.watchReach(ctx)
}

// watchSupervisor returns ctx watched for lock and elect: they log when
// the cluster cannot be reached, and when it can again.
func watchSupervisor(ctx context.Context, log hclog.Logger) (context.Context, func()) {
	w := &reachWatch{
		lost: func(err error) {
			log.Warn("cannot reach the cluster: " + unreachableText(err, "until stopped or -wait ends"))
		},
		found: func() { log.Info("reached the cluster") },
	}
	return w.watchReach(ctx)
}

// setupHelp names the flags and variables of the CLI that set each
// setting of client.SetupError.
var setupHelp = map[string]string{
	"Addresses":    "-http-addr or " + client.EnvHTTPAddr,
	"TLS.CAFile":   "-ca-file or " + client.EnvCACert,
	"TLS.CertFile": "-client-cert and -client-key, or " + client.EnvClientCert + " and " + client.EnvClientKey,
}

// failText is what a command prints for err: a mistake in the setup
// with the flags that fix it, a server out of reach with the flag that
// sets the addresses.
func failText(err error) string {
	var se *client.SetupError
	if errors.As(err, &se) {
		var fix []string
		for _, s := range se.Settings {
			if h, ok := setupHelp[s]; ok {
				fix = append(fix, h)
			}
		}
		msg := fmt.Sprintf("%s: %s (%v)", se.Address, se.Problem, se.Err)
		if len(fix) > 0 {
			msg += "\nFix it with " + strings.Join(fix, "; or ") + "."
		}
		return msg
	}
	var oe *net.OpError
	var de *net.DNSError
	if errors.As(err, &de) || errors.As(err, &oe) && oe.Op == "dial" {
		return fmt.Sprintf("%v\nNo server could be reached: is one running there? -http-addr or %s sets the addresses.", err, client.EnvHTTPAddr)
	}
	return err.Error()
}
