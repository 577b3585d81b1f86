package client

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// Sentinel errors. Every error that the API answers with a code is an
// [*APIError], and errors.Is matches it against the sentinel of its code, so
// callers compare with errors.Is and reach the details with errors.As.
var (
	// ErrHeld: the key is held by another holder (code "held", HTTP 409).
	// The APIError's Lease is the current lease, nil when the ACL token has
	// no read on the key. Acquiring again is only useful after waiting.
	ErrHeld = errors.New("lease held by another holder")

	// ErrLeaseLost: the lease named by a renewal is no longer held under that
	// holder and token (code "lease_lost"). The APIError's Reason says why
	// (ReasonExpired, ReasonReleased, ReasonRevoked, ReasonDisabled,
	// ReasonProhibited, ReasonSuperseded, ReasonNotHolder, ReasonUnknown).
	// The caller must stop acting as the holder at once.
	ErrLeaseLost = errors.New("lease lost")

	// ErrNotFound: the key was never seen, or the server id is unknown
	// (code "not_found").
	ErrNotFound = errors.New("not found")

	// ErrNotCaughtUp: a server to promote does not answer the leader's Raft
	// messages, or its log is behind (code "not_caught_up", HTTP 409).
	// Nothing changed; promote it again once it has caught up.
	ErrNotCaughtUp = errors.New("server not caught up with the leader")

	// ErrUnsafeRemoval: an operator's removal of a server was refused
	// because it could cost quorum by accident (code "unsafe_removal",
	// HTTP 409): the server is alive and in touch with the leader, or the
	// removal would leave fewer voters than the cluster was bootstrapped
	// with. The message names the rule; nothing changed. Remove it with
	// force to go ahead.
	ErrUnsafeRemoval = errors.New("removal refused")

	// ErrInvalid: the request was refused as malformed (any HTTP 400 code:
	// invalid_key, invalid_ttl, body_too_large, ...; the APIError's Field
	// names the culprit), or the client refused to send it. Retrying the
	// same request cannot succeed.
	ErrInvalid = errors.New("invalid request")

	// ErrNoLeader: the cluster has no leader ready to serve (code
	// "no_leader"). The request was not carried out; the client retries it.
	ErrNoLeader = errors.New("no leader")

	// ErrLeadershipLost: the leader lost its leadership while the request
	// was in flight (code "leadership_lost"). The outcome is unknown: the
	// request may or may not have taken effect.
	ErrLeadershipLost = errors.New("leadership lost: outcome unknown")

	// ErrOverloaded: the leader has too many requests in flight (code
	// "overloaded"). The request was not carried out; the APIError's
	// RetryAfter says when to come back.
	ErrOverloaded = errors.New("server overloaded")

	// ErrTimeout: the server gave up waiting for Raft (code "timeout"). The
	// outcome is unknown.
	ErrTimeout = errors.New("server timed out: outcome unknown")

	// ErrDisabled: an operator disabled the key; nobody may acquire it
	// (code "disabled", HTTP 403).
	ErrDisabled = errors.New("key disabled")

	// ErrProhibited: an operator prohibited this holder on the key (code
	// "prohibited", HTTP 403).
	ErrProhibited = errors.New("holder prohibited on key")

	// ErrLeaseExpiredLocally: a kept-alive lease (see Client.Acquire) reached
	// its local safety deadline, Meta.SentAt of the last successful acquire
	// or renewal + TTL − margin, without a successful renewal. The cluster
	// may still hold it for a moment, but the holder must stop acting now:
	// from TTL after that send time another holder may be granted the key.
	// The error wraps the last renewal failure, if there was one.
	ErrLeaseExpiredLocally = errors.New("lease expired locally: no renewal succeeded before its local deadline")

	// ErrRenewFailed: a kept-alive lease acquired WithLoseOnRenewFailure
	// ended at its first failed renewal, before its local deadline. The
	// cluster may still hold it: Release hands it back, so that another
	// holder need not wait for its TTL. The error wraps the failure.
	ErrRenewFailed = errors.New("lease given up: a renewal failed")

	// ErrReleased: the lease was handed back with Lease.Release (or
	// Leadership.Resign). It is the Err of such a lease, never the error of
	// a call.
	ErrReleased = errors.New("lease released")

	// ErrDuplicateLease: Client.Acquire was called for a key that the same
	// Client already keeps alive, or is acquiring or releasing, for the same
	// holder. The cluster would answer with the same lease and token, and
	// two keep-alive loops for one lease would each end it on their own.
	// Use the *Lease you have, or acquire under another holder.
	ErrDuplicateLease = errors.New("lease already kept by this client for this holder")

	// ErrPermissionDenied: the request's ACL token (Config.Token) lacks
	// the right the request needs, or the request had no token and the
	// cluster denies anonymous requests (code "permission_denied", HTTP
	// 403). The message names the right and the key, prefix or group.
	ErrPermissionDenied = errors.New("permission denied")

	// ErrACLNotFound: no ACL token has the secret the request carried; it
	// was never created or has been deleted (code "acl_not_found", 403).
	ErrACLNotFound = errors.New("acl token not found")

	// ErrACLBootstrapped: the cluster's ACL system was bootstrapped already
	// (code "acl_bootstrapped", 403).
	ErrACLBootstrapped = errors.New("acl system already bootstrapped")

	// ErrACLDisabled: an ACL call reached a server that does not enforce
	// ACLs (code "acl_disabled", 400).
	ErrACLDisabled = errors.New("acls are not enabled")

	// ErrNotHolder: a release named a holder and token that never were the
	// key's lease: the current token under another holder, or a token the
	// key never had (code "not_holder", HTTP 409). The APIError's Lease is
	// the current lease, nil when the ACL token has no read on the key.
	// Nothing was released. (A release of a lease that
	// merely ended already succeeds: releases stay idempotent.)
	ErrNotHolder = errors.New("not the holder of the lease")

	// ErrWrongSecret: a renewal or a release named the key's held lease
	// (holder and token) but not its secret (code "wrong_secret", HTTP
	// 409; the APIError's Field is "secret"). Nothing changed. A holder's
	// name and token are readable by anyone with read: only the secret
	// that the acquire returned makes a caller the lease's holder. A
	// lease acquired before servers kept secrets has none and is refused
	// so too: it ends at its deadline. An acquire under the lease's
	// holder with another secret is refused as held (ErrHeld, Field
	// "secret").
	ErrWrongSecret = errors.New("wrong lease secret")

	// ErrCASFailed: a group put's compare-and-set failed: the group exists
	// and the put asked to create it only, or its modify index is not the
	// one given (code "cas_failed", HTTP 409). The APIError's Group is the
	// current group, if any. Nothing changed.
	ErrCASFailed = errors.New("compare-and-set failed")
	// ErrCompacted: the events asked for (GET /v1/events) are older than
	// the server's event history (code "compacted", HTTP 410). The
	// APIError's OldestIndex is the oldest index the history serves: the
	// reader missed events, and must read the current state (a
	// linearizable list, which reflects every entry up to OldestIndex at
	// least) and watch again from OldestIndex, or from the list's index if
	// that is higher.
	ErrCompacted = errors.New("event history compacted")

	// ErrBackupUnverified: a restore of a backup that the cluster's backup
	// key did not sign (another cluster's, an edited one, one written
	// before signed backups), without RestoreOptions.Unverified (code
	// "backup_unverified", HTTP 400). Nothing changed.
	ErrBackupUnverified = errors.New("backup not signed by this cluster")

	// ErrStaleToken: FenceValidator.Check refused a fencing token because a
	// newer token exists for the key, or because the token was never
	// granted for it. The write that carries it comes from a superseded
	// holder and must be rejected.
	ErrStaleToken = errors.New("stale fencing token")
)

// codeSentinels maps every error code of the API to the sentinel error an
// APIError of that code matches; nil where no sentinel applies.
var codeSentinels = map[string]error{
	wire.CodeInvalidKey:          ErrInvalid,
	wire.CodeInvalidHolder:       ErrInvalid,
	wire.CodeInvalidTTL:          ErrInvalid,
	wire.CodeInvalidWait:         ErrInvalid,
	wire.CodeInvalidToken:        ErrInvalid,
	wire.CodeInvalidMetadata:     ErrInvalid,
	wire.CodeInvalidIndex:        ErrInvalid,
	wire.CodeInvalidQuery:        ErrInvalid,
	wire.CodeInvalidBody:         ErrInvalid,
	wire.CodeInvalidName:         ErrInvalid,
	wire.CodeInvalidKeys:         ErrInvalid,
	wire.CodeInvalidCount:        ErrInvalid,
	wire.CodeInvalidPrefix:       ErrInvalid,
	wire.CodeInvalidMaxPerWorker: ErrInvalid,
	wire.CodeInvalidProhibited:   ErrInvalid,
	wire.CodeInvalidWorker:       ErrInvalid,
	wire.CodeInvalidSecret:       ErrInvalid,
	wire.CodeWrongSecret:         ErrWrongSecret,
	wire.CodeBodyTooLarge:        ErrInvalid,
	wire.CodeNotFound:            ErrNotFound,
	wire.CodeLeaseLost:           ErrLeaseLost,
	wire.CodeHeld:                ErrHeld,
	wire.CodeNothingNew:          nil,
	wire.CodeNotCaughtUp:         ErrNotCaughtUp,
	wire.CodeUnsafeRemoval:       ErrUnsafeRemoval,
	wire.CodeOverloaded:          ErrOverloaded,
	wire.CodeTooManyConnections:  ErrOverloaded,
	wire.CodeNoLeader:            ErrNoLeader,
	wire.CodeLeadershipLost:      ErrLeadershipLost,
	wire.CodeTimeout:             ErrTimeout,
	wire.CodeInternal:            nil,
	wire.CodeDisabled:            ErrDisabled,
	wire.CodeProhibited:          ErrProhibited,
	wire.CodeGossipPlaintext:     nil,
	wire.CodeInvalidRules:        ErrInvalid,
	wire.CodeInvalidPolicies:     ErrInvalid,
	wire.CodeInvalidGroups:       ErrInvalid,
	wire.CodePermissionDenied:    ErrPermissionDenied,
	wire.CodeACLNotFound:         ErrACLNotFound,
	wire.CodeACLBootstrapped:     ErrACLBootstrapped,
	wire.CodeACLDisabled:         ErrACLDisabled,
	wire.CodeNotHolder:           ErrNotHolder,
	wire.CodeCASFailed:           ErrCASFailed,
	wire.CodeCompacted:           ErrCompacted,
	wire.CodeBackupUnverified:    ErrBackupUnverified,
}

// APIError is an error answered by a server: a status of 400 or above with
// the error body of the API, or any other unexpected status.
type APIError struct {
	// StatusCode is the HTTP status of the answer. It is 0 when the error
	// describes one entry of a RenewMany answer.
	StatusCode int
	// Code is the stable error code ("held", "lease_lost", ...). It is empty
	// when the answer had no error body (a proxy, or a route that does not
	// exist).
	Code string
	// Message is the server's explanation, for people.
	Message string
	// Field names the JSON field or query parameter to blame, if any.
	Field string
	// Reason says why a lease was lost (code lease_lost only).
	Reason string
	// Lease is the current lease (codes held and not_holder); nil when
	// the ACL token has no read on the key.
	Lease *LeaseInfo
	// Group is the current group (code cas_failed, when it exists).
	Group *GroupSummary
	// RetryAfter is the Retry-After header of the answer, zero if absent.
	RetryAfter time.Duration
	// Index is the X-Tenure-Index of the answer, zero if absent. A 404 for
	// a key not created yet carries one: pass it as QueryOptions.WaitIndex
	// to block until the key appears.
	Index uint64
	// NotReady is X-Tenure-Not-Ready: set when the answering node is not
	// ready (a failing disk, or too far behind the leader). A 404 of a
	// stale read with NotReady set does not prove that the key is absent.
	NotReady string
	// OldestIndex is the oldest index the server's event history serves
	// (code compacted only).
	OldestIndex uint64
}

// Error implements error: "<code> (<reason>): <message>".
func (e *APIError) Error() string {
	var b strings.Builder
	if e.Code != "" {
		b.WriteString(e.Code)
	} else {
		fmt.Fprintf(&b, "http status %d", e.StatusCode)
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, " (%s)", e.Reason)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Field != "" && !strings.Contains(e.Message, e.Field) {
		fmt.Fprintf(&b, " (field %s)", e.Field)
	}
	return b.String()
}

// Is reports whether target is the sentinel error of e's code.
func (e *APIError) Is(target error) bool {
	s := e.sentinel()
	return s != nil && s == target
}

// sentinel maps the code, or the status when there is no code, to a
// sentinel error; nil when none applies (internal, unknown codes).
func (e *APIError) sentinel() error {
	if s, ok := codeSentinels[e.Code]; ok {
		return s
	}
	// A code newer than this client: its kind still shows in its prefix or
	// its status.
	if strings.HasPrefix(e.Code, "invalid_") || e.StatusCode == http.StatusBadRequest {
		return ErrInvalid
	}
	if e.Code != "" {
		return nil
	}
	// No error body: only the statuses whose meaning does not depend on the
	// code are mapped.
	switch e.StatusCode {
	case http.StatusTooManyRequests:
		return ErrOverloaded
	case http.StatusServiceUnavailable:
		return ErrNoLeader
	case http.StatusGatewayTimeout:
		return ErrTimeout
	}
	return nil
}

// parseRetryAfter reads a Retry-After header: seconds, or an HTTP date.
// It returns zero when the header is absent, malformed or in the past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
