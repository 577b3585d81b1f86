package wire

import "slices"

// Error codes of the HTTP API v1. They are stable: a code never changes
// meaning. The server answers with these constants and no others
// (ErrorCodes lists them).
const (
	CodeInvalidKey          = "invalid_key"
	CodeInvalidHolder       = "invalid_holder"
	CodeInvalidTTL          = "invalid_ttl"
	CodeInvalidWait         = "invalid_wait"
	CodeInvalidToken        = "invalid_token"
	CodeInvalidMetadata     = "invalid_metadata"
	CodeInvalidIndex        = "invalid_index"
	CodeInvalidQuery        = "invalid_query"
	CodeInvalidBody         = "invalid_body"
	CodeInvalidName         = "invalid_name"
	CodeInvalidKeys         = "invalid_keys"
	CodeInvalidCount        = "invalid_count"
	CodeInvalidPrefix       = "invalid_prefix"
	CodeInvalidMaxPerWorker = "invalid_max_per_worker"
	CodeInvalidProhibited   = "invalid_prohibited"
	CodeInvalidWorker       = "invalid_worker"
	CodeInvalidSecret       = "invalid_secret"
	CodeWrongSecret         = "wrong_secret"
	CodeBodyTooLarge        = "body_too_large"
	CodeNotFound            = "not_found"
	CodeLeaseLost           = "lease_lost"
	CodeHeld                = "held"
	CodeNothingNew          = "nothing_new"
	CodeNotCaughtUp         = "not_caught_up"
	CodeUnsafeRemoval       = "unsafe_removal"
	CodeOverloaded          = "overloaded"
	CodeTooManyConnections  = "too_many_connections"
	CodeNoLeader            = "no_leader"
	CodeLeadershipLost      = "leadership_lost"
	CodeTimeout             = "timeout"
	CodeInternal            = "internal"
	CodeDisabled            = "disabled"
	CodeProhibited          = "prohibited"
	CodeGossipPlaintext     = "gossip_plaintext"
	CodeInvalidRules        = "invalid_rules"
	CodeInvalidPolicies     = "invalid_policies"
	CodeInvalidGroups       = "invalid_groups"
	CodePermissionDenied    = "permission_denied"
	CodeACLNotFound         = "acl_not_found"
	CodeACLBootstrapped     = "acl_bootstrapped"
	CodeACLDisabled         = "acl_disabled"
	CodeNotHolder           = "not_holder"
	CodeCASFailed           = "cas_failed"
	CodeCompacted           = "compacted"
	CodeBackupUnverified    = "backup_unverified"
)

// codes lists every constant above (a test checks that the client maps
// each one to its sentinel, and the server answers with these only).
var codes = []string{
	CodeInvalidKey,
	CodeInvalidHolder,
	CodeInvalidTTL,
	CodeInvalidWait,
	CodeInvalidToken,
	CodeInvalidMetadata,
	CodeInvalidIndex,
	CodeInvalidQuery,
	CodeInvalidBody,
	CodeInvalidName,
	CodeInvalidKeys,
	CodeInvalidCount,
	CodeInvalidPrefix,
	CodeInvalidMaxPerWorker,
	CodeInvalidProhibited,
	CodeInvalidWorker,
	CodeInvalidSecret,
	CodeWrongSecret,
	CodeBodyTooLarge,
	CodeNotFound,
	CodeLeaseLost,
	CodeHeld,
	CodeNothingNew,
	CodeNotCaughtUp,
	CodeUnsafeRemoval,
	CodeOverloaded,
	CodeTooManyConnections,
	CodeNoLeader,
	CodeLeadershipLost,
	CodeTimeout,
	CodeInternal,
	CodeDisabled,
	CodeProhibited,
	CodeGossipPlaintext,
	CodeInvalidRules,
	CodeInvalidPolicies,
	CodeInvalidGroups,
	CodePermissionDenied,
	CodeACLNotFound,
	CodeACLBootstrapped,
	CodeACLDisabled,
	CodeNotHolder,
	CodeCASFailed,
	CodeCompacted,
	CodeBackupUnverified,
}

// ErrorCodes returns every error code of the HTTP API v1, sorted.
func ErrorCodes() []string {
	return slices.Sorted(slices.Values(codes))
}

// Reasons carried by a lease_lost error, and by a free lease to say why it
// is free.
const (
	ReasonExpired    = "expired"
	ReasonReleased   = "released"
	ReasonRevoked    = "revoked"
	ReasonDisabled   = "disabled"   // an operator disabled the key while it was held
	ReasonProhibited = "prohibited" // an operator prohibited the holder on the key
	ReasonSuperseded = "superseded" // held under a newer token or by another holder
	ReasonUnknown    = "unknown"    // the key has no record: never held, or forgotten
	// ReasonNotHolder: the renewal's holder and token never were the key's
	// lease (the current token under another holder, or a token the key
	// never had).
	ReasonNotHolder = "not_holder"
	// ReasonNeverAcquired: a free key of a group that has no lease record
	// (never acquired, or its record forgotten after the servers'
	// -free-key-retention); listed with state=free, token 0, no holder.
	ReasonNeverAcquired = "never_acquired"
)
