package harness

import (
	"context"
	"errors"
	"testing"
	"time"
)

// DefaultInterval is the pause between two polls of the package-level
// WaitFor, WaitUntil and Holds: short, for conditions that read memory.
const DefaultInterval = 5 * time.Millisecond

// A Poller calls a condition again and again, Interval apart, until it
// holds or a deadline passes. Suites whose conditions are costly (an HTTP
// request to every server process) poll less often with a Poller of their
// own.
type Poller struct {
	Interval time.Duration
}

// WaitFor polls cond until it returns nil, and fails t with cond's last
// error when timeout passes first. Return errors that say what is still
// wrong: they are the failure message.
func (p Poller) WaitFor(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	if err := p.Poll(timeout, cond); err != nil {
		t.Fatalf("not true after %v: %v", timeout, err)
	}
}

// WaitUntil polls cond until it returns true, and fails t, naming what it
// waited for, when timeout passes first.
func (p Poller) WaitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	err := p.Poll(timeout, func() error {
		if cond() {
			return nil
		}
		return errFalse
	})
	if err != nil {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// Holds polls cond for d and fails t as soon as it returns an error: the
// condition must stay true for all of d.
func (p Poller) Holds(t testing.TB, d time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := cond(); err != nil {
			t.Fatalf("stopped holding after %v: %v", d-time.Until(deadline), err)
		}
		time.Sleep(p.Interval)
	}
}

var errFalse = errors.New("condition false")

// Poll calls cond until it returns nil (Poll returns nil) or timeout has
// passed (Poll returns cond's last error). cond runs at least once. It is
// for code that is not a test, such as a benchmark's set-up, and reports
// rather than fails.
func (p Poller) Poll(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(p.Interval)
	}
}

var defaultPoller = Poller{Interval: DefaultInterval}

// WaitFor polls cond every DefaultInterval until it returns nil, and fails
// t with cond's last error when timeout passes first.
func WaitFor(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	defaultPoller.WaitFor(t, timeout, cond)
}

// WaitUntil polls cond every DefaultInterval until it returns true, and
// fails t, naming what it waited for, when timeout passes first.
func WaitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	defaultPoller.WaitUntil(t, timeout, what, cond)
}

// Holds polls cond every DefaultInterval for d and fails t as soon as it
// returns an error.
func Holds(t testing.TB, d time.Duration, cond func() error) {
	t.Helper()
	defaultPoller.Holds(t, d, cond)
}

// Context returns a context that ends after d or when t ends, whichever
// comes first.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
