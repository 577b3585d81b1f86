package outcome

import (
	"errors"
	"fmt"

	"github.com/tenure-io/tenure/fsm"
)

// The refusals the error types below unwrap to; package cluster names
// them and says what each means to a caller.
var (
	// ErrHeld: the key is held by another holder (HeldError).
	ErrHeld = errors.New("held by another holder")
	// ErrLeaseLost: a renewal found the lease no longer held (LostError).
	ErrLeaseLost = errors.New("lease lost")
	// ErrNotHolder: a release named a lease the key never had (NotHolderError).
	ErrNotHolder = errors.New("not the holder of the lease")
	// ErrCASFailed: a group put's expected modify index is not the group's
	// (CASError).
	ErrCASFailed = errors.New("compare-and-set failed")
	// ErrWrongSecret: a renewal or release gave another secret than the
	// lease's (SecretError).
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
