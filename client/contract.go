package client

import "github.com/tenure-io/tenure/client/wire"

// The types and limits below are declared once, in package wire, which the
// servers use too; they are named here as well because the calls of this
// package take or return them.

// LeaseInfo is a lease as the API reports it (see wire.LeaseInfo).
type LeaseInfo = wire.LeaseInfo

// LeaseState is the state of a key: held or free.
type LeaseState = wire.LeaseState

// The states of a key.
const (
	StateHeld = wire.StateHeld
	StateFree = wire.StateFree
)

// LeaseRef names one lease to renew (see wire.LeaseRef).
type LeaseRef = wire.LeaseRef

// GroupSummary is a group in a list.
type GroupSummary = wire.GroupSummary

// ACLCheck is one question of Authorize (see wire.ACLCheck).
type ACLCheck = wire.ACLCheck

// ACLCheckResult is a check with its answer.
type ACLCheckResult = wire.ACLCheckResult

// Member is one gossip member: a server or a worker.
type Member = wire.Member

// MemberMeta is what a member announces over gossip (see wire.MemberMeta).
type MemberMeta = wire.MemberMeta

// SnapshotContents is what a backup holds (tenure snapshot inspect).
type SnapshotContents = wire.SnapshotContents

// Limits of the API.
const (
	// MaxRenewBatch is the largest number of leases one RenewMany call
	// may renew.
	MaxRenewBatch = wire.MaxRenewBatch
	// MaxSnapshotBytes bounds a backup the client reads and a restore the
	// server accepts.
	MaxSnapshotBytes = wire.MaxSnapshotBytes
	// MaxACLChecks is the largest number of checks one Authorize call may
	// carry.
	MaxACLChecks = wire.MaxACLChecks
)

// Keyring operations of ChangeKeyring.
const (
	KeyringInstall = wire.KeyringInstall
	KeyringUse     = wire.KeyringUse
	KeyringRemove  = wire.KeyringRemove
)

// KeyFingerprint names a gossip key without revealing it, as members
// announce their keys: the first 8 bytes of its SHA-256, in hex.
func KeyFingerprint(key []byte) string { return wire.KeyFingerprint(key) }

// Answers of the API that calls of this package return, and the edit that
// EditControl takes; see package wire for each.
type (
	Event           = wire.Event
	WorkerInfo      = wire.WorkerInfo
	WorkerGroupKeys = wire.WorkerGroupKeys
	Assignment      = wire.Assignment
	DrainResult     = wire.DrainResult
	KeyControlEdit  = wire.KeyControlEdit
	Keyring         = wire.Keyring
	KeyringKey      = wire.KeyringKey
	PromoteResult   = wire.PromoteResult
	RemoveResult    = wire.RemoveResult
	ReadmitResult   = wire.ReadmitResult
	Health          = wire.Health
	Readiness       = wire.Readiness
)
