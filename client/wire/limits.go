package wire

import "time"

// MaxRenewBatch is the largest number of leases one RenewMany call may
// carry.
const MaxRenewBatch = 1024

// The defaults of a group balanced by load (GroupBalance): its imbalance,
// and the keys it may move for balance per move interval.
const (
	DefaultImbalance    = 1.2
	DefaultMoveBudget   = 16
	DefaultMoveInterval = "30s"
)

// MaxLoad is the largest load a renewal may report (LeaseRef.Load,
// RenewManyBody.Load) and the largest load capacity a worker may announce.
const MaxLoad = 1e15

// MaxPrepare is the longest a worker may prepare a key that moves to it
// (a warm hand-off, MemberMeta.PrepareMS): the balancer moves the key
// once that time passed, prepared or not. MaxPrepareKeys bounds the keys
// of one report that they are prepared (PreparedBody.Keys).
const (
	MaxPrepare     = 10 * time.Minute
	MaxPrepareKeys = 1024
)

// MaxSnapshotBytes bounds a backup the client reads and a restore the
// server accepts. A million held leases make a snapshot of about 63 MB.
const MaxSnapshotBytes = 512 << 20

// MaxACLChecks is the largest number of checks one Authorize call may
// carry.
const MaxACLChecks = 100

// Limits of a lease's holder and metadata (docs/http-api.md).
const (
	MaxHolderLen       = 256
	MaxMetadataEntries = 16
	MaxMetadataKey     = 64
	MaxMetadataValue   = 1024
)

// DebugProfiles are the runtime profiles a server serves at
// /v1/debug/pprof/{profile}.
var DebugProfiles = []string{"goroutine", "heap"}
