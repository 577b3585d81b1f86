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

// GroupBalance is how the balancer places a group's keys (see
// wire.GroupBalance).
type GroupBalance = wire.GroupBalance

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

// Limits of the API: the most leases of one RenewMany call, the largest
// backup the client reads and a restore the server accepts, and the most
// checks of one Authorize call (see package wire).
const (
	MaxRenewBatch    = wire.MaxRenewBatch
	MaxSnapshotBytes = wire.MaxSnapshotBytes
	MaxACLChecks     = wire.MaxACLChecks
)

// Keyring operations of ChangeKeyring.
const (
	KeyringInstall = wire.KeyringInstall
	KeyringUse     = wire.KeyringUse
	KeyringRemove  = wire.KeyringRemove
)

// KeyFingerprint names a gossip key without revealing it (see
// wire.KeyFingerprint).
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

// More answers and bodies of the API; see package wire for each.
type (
	NodeStatus         = wire.NodeStatus
	ServerInfo         = wire.ServerInfo
	SnapshotInfo       = wire.SnapshotInfo
	RestoreResult      = wire.RestoreResult
	ACLToken           = wire.ACLToken
	ACLTokenSpec       = wire.ACLTokenSpec
	ACLTokenList       = wire.ACLTokenList
	ACLRule            = wire.ACLRule
	ACLPolicy          = wire.ACLPolicy
	ACLPolicySpec      = wire.ACLPolicySpec
	ACLPolicyList      = wire.ACLPolicyList
	WorkerRegistration = wire.WorkerRegistration
	PreparedBody       = wire.PreparedBody
	GroupSpec          = wire.GroupSpec
	GroupKey           = wire.GroupKey
	GroupWorker        = wire.GroupWorker
	Group              = wire.Group
	KeyControl         = wire.KeyControl
	RevokeResult       = wire.RevokeResult
	RevokedLease       = wire.RevokedLease
	PlacementHealth    = wire.PlacementHealth
	UnownedKey         = wire.UnownedKey
	StuckWorker        = wire.StuckWorker
	GroupBelowMin      = wire.GroupBelowMin
	StaleLease         = wire.StaleLease
	GroupHealth        = wire.GroupHealth
	ControlledKey      = wire.ControlledKey
)

// Headers of the HTTP API v1 (see package wire for each).
const (
	HeaderLeaderAddr   = wire.HeaderLeaderAddr
	HeaderIndex        = wire.HeaderIndex
	HeaderLastContact  = wire.HeaderLastContact
	HeaderKnownLeader  = wire.HeaderKnownLeader
	HeaderRelease      = wire.HeaderRelease
	HeaderOldestIndex  = wire.HeaderOldestIndex
	HeaderAppliedIndex = wire.HeaderAppliedIndex
	HeaderBehind       = wire.HeaderBehind
	HeaderNotReady     = wire.HeaderNotReady
	HeaderContentHash  = wire.HeaderContentHash
	HeaderToken        = wire.HeaderToken
)

// ACL rights, as policies name them (see ACLRule and package wire).
const (
	RightRead     = wire.RightRead
	RightWrite    = wire.RightWrite
	RightRevoke   = wire.RightRevoke
	RightGroups   = wire.RightGroups
	RightOperator = wire.RightOperator
	RightACL      = wire.RightACL
	RightMetrics  = wire.RightMetrics
	RightDebug    = wire.RightDebug
)

// CheckKey asks for right on a lease key.
func CheckKey(right, key string) ACLCheck { return wire.CheckKey(right, key) }

// CheckPrefix asks for right on a prefix ("" is every name).
func CheckPrefix(right, prefix string) ACLCheck { return wire.CheckPrefix(right, prefix) }

// CheckGroup asks for right on a group name.
func CheckGroup(right, group string) ACLCheck { return wire.CheckGroup(right, group) }

// CheckWorker asks for right on a worker id.
func CheckWorker(right, id string) ACLCheck { return wire.CheckWorker(right, id) }

// CheckCluster asks for a cluster right (RightOperator, RightACL, ...).
func CheckCluster(right string) ACLCheck { return wire.CheckCluster(right) }

// Event types (Event.Type); see package wire for each.
const (
	EventAcquired        = wire.EventAcquired
	EventReleased        = wire.EventReleased
	EventExpired         = wire.EventExpired
	EventRevoked         = wire.EventRevoked
	EventHandedOff       = wire.EventHandedOff
	EventGroupChanged    = wire.EventGroupChanged
	EventAssigned        = wire.EventAssigned
	EventControlChanged  = wire.EventControlChanged
	EventDrained         = wire.EventDrained
	EventMetadataChanged = wire.EventMetadataChanged
	EventForgotten       = wire.EventForgotten
	EventStuck           = wire.EventStuck
	EventEnding          = wire.EventEnding
)

// EventTypes returns every event type, in the API's order.
func EventTypes() []string { return wire.EventTypes() }

// Reasons carried by a lease_lost error, and by a free lease to say why it
// is free; see package wire for each.
const (
	ReasonExpired       = wire.ReasonExpired
	ReasonReleased      = wire.ReasonReleased
	ReasonRevoked       = wire.ReasonRevoked
	ReasonDisabled      = wire.ReasonDisabled
	ReasonProhibited    = wire.ReasonProhibited
	ReasonSuperseded    = wire.ReasonSuperseded
	ReasonUnknown       = wire.ReasonUnknown
	ReasonNotHolder     = wire.ReasonNotHolder
	ReasonNeverAcquired = wire.ReasonNeverAcquired
)

// DebugProfiles are the runtime profiles a server serves (the same slice
// as wire.DebugProfiles).
var DebugProfiles = wire.DebugProfiles

// NewLeaseSecret returns a new lease secret (see wire.NewLeaseSecret), as
// New makes one when Config.LeaseSecret is empty.
func NewLeaseSecret() string { return wire.NewLeaseSecret() }
