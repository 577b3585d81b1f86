package cluster

import (
	"errors"

	"github.com/tenure-io/tenure/cluster/internal/check"
	"github.com/tenure-io/tenure/cluster/internal/outcome"
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
	ErrHeld = outcome.ErrHeld

	// ErrLeaseLost: a renewal found the lease no longer held. Returned
	// wrapped in a *LostError that carries the reason.
	ErrLeaseLost = outcome.ErrLeaseLost

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
	ErrNotHolder = outcome.ErrNotHolder

	// ErrCASFailed: a group put's expected modify index is not the
	// group's (index 0: the group exists). Returned wrapped in a
	// *CASError with the current group.
	ErrCASFailed = outcome.ErrCASFailed

	// ErrWrongSecret: a renewal or a release named the key's held lease
	// (holder and token) but not its secret, or the lease was acquired
	// before secrets existed and has none. Nothing changed. Returned
	// wrapped in a *SecretError.
	ErrWrongSecret = outcome.ErrWrongSecret
)

// SecretError is the refusal of a renewal or a release whose secret is
// not the lease's (outcome.SecretError).
type SecretError = outcome.SecretError

// NotHolderError is returned by Release when the holder and token never
// were the key's lease (outcome.NotHolderError).
type NotHolderError = outcome.NotHolderError

// CASError is returned by PutGroup when its compare-and-set fails
// (outcome.CASError).
type CASError = outcome.CASError

// HeldError is returned by Acquire when another holder has the key
// (outcome.HeldError).
type HeldError = outcome.HeldError

// LostError is returned by Renew when the lease is gone
// (outcome.LostError).
type LostError = outcome.LostError

// InvalidError names the field that broke a rule.
type InvalidError = check.InvalidError

func invalid(field, format string, args ...any) error { return check.Invalid(field, format, args...) }
