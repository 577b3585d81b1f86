package cluster

import (
	"errors"
	"fmt"

	"github.com/tenure-io/tenure/cluster/internal/check"
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

	// ErrTimeout: the leader gave up waiting for Raft to finish something
	// it had started (a leadership transfer). The outcome is unknown: read
	// the state again before retrying.
	ErrTimeout = errors.New("timed out, outcome unknown")

	// ErrHeld: the key is held by another holder. Returned wrapped in a
	// *HeldError that carries the current lease.
	ErrHeld = errors.New("held by another holder")

	// ErrLeaseLost: a renewal found the lease no longer held. Returned
	// wrapped in a *LostError that carries the reason.
	ErrLeaseLost = errors.New("lease lost")

	// ErrNotFound: the key was never seen, or the server is unknown.
	ErrNotFound = check.ErrNotFound

	// ErrNotCaughtUp: a server to promote does not answer the leader's
	// Raft messages at its configured address, or its log trails the
	// leader's commit index by more than MaxCatchUpLag. Retry once it has
	// caught up.
	ErrNotCaughtUp = errors.New("server not caught up with the leader")

	// ErrUnsafeRemoval: removing the server would break a rule that keeps
	// quorum from being lost by accident: it is alive and in touch with
	// the leader, or it would leave fewer voters than the cluster's
	// configured size. The error names the rule; nothing changed. Remove
	// it with force to go ahead.
	ErrUnsafeRemoval = errors.New("removal refused")

	// ErrOverloaded: too many writes are queued on the leader; retry later.
	ErrOverloaded = errors.New("overloaded")

	// ErrGossipPlaintext: a keyring call reached a server that gossips
	// without encryption (started without -gossip-key).
	ErrGossipPlaintext = errors.New("gossip encryption is off on this server: start every server with -gossip-key")

	// ErrInvalid: the request breaks a rule; the error names the field.
	ErrInvalid = check.ErrInvalid

	// ErrShutdown: the node is shutting down.
	ErrShutdown = errors.New("node is shutting down")

	// ErrDisabled: an operator disabled the key; nobody may acquire it.
	ErrDisabled = errors.New("key is disabled")

	// ErrProhibited: an operator prohibited this holder on the key.
	ErrProhibited = errors.New("holder is prohibited on this key")

	// ErrNotHolder: a release named a holder and token that never were
	// the key's lease (another holder's token, or a token the key never
	// had). Returned wrapped in a *NotHolderError with the current lease.
	ErrNotHolder = errors.New("not the holder of the lease")

	// ErrCASFailed: a group put's expected modify index is not the
	// group's (index 0: the group exists). Returned wrapped in a
	// *CASError with the current group.
	ErrCASFailed = errors.New("compare-and-set failed")

	// ErrWrongSecret: a renewal or a release named the key's held lease
	// (holder and token) but not its secret, or the lease was acquired
	// before secrets existed and has none. Nothing changed. Returned
	// wrapped in a *SecretError.
	ErrWrongSecret = errors.New("wrong lease secret")
)

// SecretError is the refusal of a renewal or a release whose secret is
// not the lease's.
type SecretError struct {
	Key string
}

func (e *SecretError) Error() string {
	return fmt.Sprintf("secret: not the secret of the lease on %q (its acquirer's, returned by the acquire); a holder's name and token alone do not make the caller its holder", e.Key)
}

// Unwrap makes errors.Is(err, ErrWrongSecret) true.
func (e *SecretError) Unwrap() error { return ErrWrongSecret }

// NotHolderError is returned by Release when the holder and token never
// were the key's lease. Lease is the key's current record.
type NotHolderError struct {
	Lease *fsm.Lease
}

func (e *NotHolderError) Error() string {
	state := "free"
	if e.Lease.Held {
		state = "held by " + fmt.Sprintf("%q", e.Lease.Holder)
	}
	return fmt.Sprintf("key %q is %s under token %d: the release names another lease", e.Lease.Key, state, e.Lease.Token)
}

// Unwrap makes errors.Is(err, ErrNotHolder) true.
func (e *NotHolderError) Unwrap() error { return ErrNotHolder }

// CASError is returned by PutGroup when its compare-and-set fails. Group
// is the current group (nil if it does not exist).
type CASError struct {
	Name  string
	Index uint64
	Group *fsm.Group
}

func (e *CASError) Error() string {
	if e.Group == nil {
		return fmt.Sprintf("group %q does not exist, expected modify index %d", e.Name, e.Index)
	}
	if e.Index == 0 {
		return fmt.Sprintf("group %q exists (modify index %d): give its modify index as cas, or replace it", e.Name, e.Group.ModifyIndex)
	}
	return fmt.Sprintf("group %q has modify index %d, expected %d", e.Name, e.Group.ModifyIndex, e.Index)
}

// Unwrap makes errors.Is(err, ErrCASFailed) true.
func (e *CASError) Unwrap() error { return ErrCASFailed }

// HeldError is returned by Acquire when another holder has the key, or
// the caller's holder under another secret (WrongSecret).
type HeldError struct {
	Lease       *fsm.Lease
	WrongSecret bool
}

func (e *HeldError) Error() string {
	if e.WrongSecret {
		return fmt.Sprintf("key %q is held by %q (token %d) under another secret: the request's secret is not the lease's, and a holder's name alone does not make the caller its holder",
			e.Lease.Key, e.Lease.Holder, e.Lease.Token)
	}
	return fmt.Sprintf("key %q is held by %q (token %d)", e.Lease.Key, e.Lease.Holder, e.Lease.Token)
}

// Unwrap makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Unwrap() error { return ErrHeld }

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
type InvalidError = check.InvalidError

func invalid(field, format string, args ...any) error { return check.Invalid(field, format, args...) }
