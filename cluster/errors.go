package cluster

import (
	"errors"
	"fmt"

	"github.com/tenure-io/tenure/fsm"
)

var (
	// ErrNotLeader: this node is not the leader; send the request to the
	// leader (package httpapi forwards it).
	ErrNotLeader = errors.New("not the leader")

	// ErrNotReady: this node is the leader but has not finished
	// establishing its leadership (barrier, LeaderEstablished, promote).
	// Retry shortly.
	ErrNotReady = errors.New("leader not ready")

	// ErrLeadershipLost: leadership was lost while the request was in
	// flight. The outcome is unknown: the command may or may not commit.
	ErrLeadershipLost = errors.New("leadership lost, outcome unknown")

	// ErrHeld: the key is held by another holder. Returned wrapped in a
	// *HeldError that carries the current lease.
	ErrHeld = errors.New("held by another holder")

	// ErrLeaseLost: a renewal found the lease no longer held. Returned
	// wrapped in a *LostError that carries the reason.
	ErrLeaseLost = errors.New("lease lost")

	// ErrNotFound: the key was never seen, or the server is unknown.
	ErrNotFound = errors.New("not found")

	// ErrNotCaughtUp: a server to promote does not answer the leader's
	// Raft messages at its configured address, or its log trails the
	// leader's commit index by more than MaxCatchUpLag. Retry once it has
	// caught up.
	ErrNotCaughtUp = errors.New("server not caught up with the leader")

	// ErrOverloaded: too many writes are queued on the leader; retry later.
	ErrOverloaded = errors.New("overloaded")

	// ErrGossipPlaintext: a keyring call reached a server that gossips
	// without encryption (started without -gossip-key).
	ErrGossipPlaintext = errors.New("gossip encryption is off on this server: start every server with -gossip-key")

	// ErrInvalid: the request breaks a rule; the error names the field.
	ErrInvalid = errors.New("invalid request")

	// ErrShutdown: the node is shutting down.
	ErrShutdown = errors.New("node is shutting down")

	// ErrDisabled: an operator disabled the key; nobody may acquire it.
	ErrDisabled = errors.New("key is disabled")

	// ErrProhibited: an operator prohibited this holder on the key.
	ErrProhibited = errors.New("holder is prohibited on this key")
)

// HeldError is returned by Acquire when another holder has the key.
type HeldError struct {
	Lease *fsm.Lease
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("key %q is held by %q (token %d)", e.Lease.Key, e.Lease.Holder, e.Lease.Token)
}

// Unwrap makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Unwrap() error { return ErrHeld }

// Lost reasons, as the HTTP API spells them.
const (
	ReasonExpired    = "expired"
	ReasonReleased   = "released"
	ReasonRevoked    = "revoked"
	ReasonDisabled   = "disabled"
	ReasonProhibited = "prohibited"
	ReasonSuperseded = "superseded"
	ReasonUnknown    = "unknown"
)

// LostError is returned by Renew when the lease is gone.
type LostError struct {
	Key    string
	Reason string
}

func (e *LostError) Error() string {
	return fmt.Sprintf("lease on %q lost: %s", e.Key, e.Reason)
}

// Unwrap makes errors.Is(err, ErrLeaseLost) true.
func (e *LostError) Unwrap() error { return ErrLeaseLost }

// InvalidError names the field that broke a rule.
type InvalidError struct {
	Field string
	Err   error
}

func (e *InvalidError) Error() string { return fmt.Sprintf("%s: %v", e.Field, e.Err) }

// Unwrap makes errors.Is(err, ErrInvalid) true, and keeps the cause.
func (e *InvalidError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Err: fmt.Errorf(format, args...)}
}
