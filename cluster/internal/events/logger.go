package events

import (
	"errors"
	"slices"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/fsm"
)

var (
	// leaseInfoEvents are logged by the leader at INFO.
	leaseInfoEvents = []fsm.EventType{fsm.EventExpired, fsm.EventEnding, fsm.EventRevoked, fsm.EventHandedOff, fsm.EventMetadataChanged}
	// leaseEvents are all the lease events.
	leaseEvents = append([]fsm.EventType{fsm.EventAcquired, fsm.EventReleased, fsm.EventForgotten}, leaseInfoEvents...)
)

// MaxAnswer bounds the events of one read of the history.
const MaxAnswer = 1000

// Logger follows the node's event history and logs its lease events. Its
// Run goroutine ends at the node's Shutdown.
type Logger struct {
	log     hclog.Logger
	machine *fsm.Machine
	// leading reports the term in which the node is the established
	// leader now; ok is false while it is none.
	leading func() (term uint64, ok bool)
}

// NewLogger returns a Logger that writes to log the events of machine,
// as a leader while leading says the node leads a term.
func NewLogger(log hclog.Logger, machine *fsm.Machine, leading func() (term uint64, ok bool)) *Logger {
	return &Logger{log: log, machine: machine, leading: leading}
}

// Run logs the events applied from now on until stop is closed.
func (l *Logger) Run(stop <-chan struct{}) {
	after, _, _ := l.machine.Indexes()
	for {
		changed := l.machine.Changed()
		after = l.logAfter(after)
		select {
		case <-stop:
			return
		case <-changed:
		}
	}
}

// types returns the event types to log now, nil when nothing is logged,
// and the term this node leads in (ok false: it is a follower).
func (l *Logger) types() (types []fsm.EventType, term uint64, leader bool) {
	term, leader = l.leading()
	switch {
	case leader && l.log.IsDebug():
		return leaseEvents, term, true
	case leader && l.log.IsInfo():
		return leaseInfoEvents, term, true
	case !leader && l.log.IsTrace():
		return leaseEvents, 0, false
	}
	return nil, term, leader
}

// logAfter logs the lease events after index after that the current role
// and level call for, and returns the index up to which it has looked.
func (l *Logger) logAfter(after uint64) uint64 {
	types, term, leader := l.types()
	if types == nil {
		applied, _, _ := l.machine.Indexes()
		return max(after, applied)
	}
	for {
		events, next, err := l.machine.Events(after, fsm.EventFilter{Types: types}, MaxAnswer)
		if err != nil {
			var compacted *fsm.CompactedError
			if !errors.As(err, &compacted) {
				l.log.Error("reading the event history", "error", err)
				return after
			}
			// The history dropped events before they were read (a burst
			// past -event-history, or a restored snapshot).
			l.log.Warn("lease events not logged: the event history no longer holds them", "after", after, "oldest_index", compacted.Oldest)
			after = compacted.Oldest
			continue
		}
		for i := range events {
			if leader && events[i].Term < term {
				// An entry of an earlier leader's term: that leader
				// logged it, or lost leadership before it could.
				continue
			}
			l.logEvent(&events[i], leader)
		}
		if len(events) < MaxAnswer || next <= after {
			return max(after, next)
		}
		after = next
	}
}

// logEvent writes one line for e.
func (l *Logger) logEvent(e *fsm.Event, leader bool) {
	level := hclog.Trace
	if leader {
		level = hclog.Debug
		if slices.Contains(leaseInfoEvents, e.Type) {
			level = hclog.Info
		}
	}
	args := make([]any, 0, 14)
	args = append(args, "key", e.Key, "holder", e.Holder, "token", e.Token, "term", e.Term, "index", e.Index)
	if e.Reason != "" {
		args = append(args, "reason", e.Reason)
	}
	if e.By != "" {
		args = append(args, "by", e.By)
	}
	l.log.Log(level, "lease_"+e.Type.String(), args...)
}
