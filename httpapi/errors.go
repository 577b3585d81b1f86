package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

// fieldCodes maps the field named by a cluster.InvalidError, or by a JSON
// type error, to its code. The codes are package client's: it owns the
// contract.
var fieldCodes = map[string]string{
	"key":      wire.CodeInvalidKey,
	"holder":   wire.CodeInvalidHolder,
	"ttl":      wire.CodeInvalidTTL,
	"wait":     wire.CodeInvalidWait,
	"token":    wire.CodeInvalidToken,
	"metadata": wire.CodeInvalidMetadata,
	"secret":   wire.CodeInvalidSecret,
	// Groups, controls and workers.
	"name":           wire.CodeInvalidName,
	"keys":           wire.CodeInvalidKeys,
	"count":          wire.CodeInvalidCount,
	"prefix":         wire.CodeInvalidPrefix,
	"add":            wire.CodeInvalidKeys,
	"max_per_worker": wire.CodeInvalidMaxPerWorker,
	"prohibited":     wire.CodeInvalidProhibited,
	"prohibit":       wire.CodeInvalidProhibited,
	"allow":          wire.CodeInvalidProhibited,
	"worker":         wire.CodeInvalidWorker,
	"stuck_grace":    wire.CodeInvalidBody,
	"min_workers":    wire.CodeInvalidBody,
	"threshold":      wire.CodeInvalidQuery,
	"by":             wire.CodeInvalidBody,
	"imbalance":      wire.CodeInvalidBody,
	"move_budget":    wire.CodeInvalidBody,
	"move_interval":  wire.CodeInvalidBody,
	"weights":        wire.CodeInvalidBody,
	"max_moving":     wire.CodeInvalidBody,
	// ACLs.
	"rules":         wire.CodeInvalidRules,
	"policies":      wire.CodeInvalidPolicies,
	"groups":        wire.CodeInvalidGroups,
	"holder_prefix": wire.CodeInvalidHolder,
}

// fieldCode is the code of a bad field: its own, or invalid_body.
func fieldCode(field string) string {
	if c := fieldCodes[field]; c != "" {
		return c
	}
	return wire.CodeInvalidBody
}

// codeStatus is the HTTP status of every error code this package answers
// with: the codes are package client's, and a test checks that the two
// lists are the same.
var codeStatus = func() map[string]int {
	m := map[string]int{}
	for status, codes := range map[int][]string{
		http.StatusBadRequest: {wire.CodeInvalidKey, wire.CodeInvalidHolder, wire.CodeInvalidTTL, wire.CodeInvalidWait,
			wire.CodeInvalidToken, wire.CodeInvalidMetadata, wire.CodeInvalidIndex, wire.CodeInvalidQuery, wire.CodeInvalidBody,
			wire.CodeInvalidName, wire.CodeInvalidKeys, wire.CodeInvalidCount, wire.CodeInvalidPrefix, wire.CodeInvalidMaxPerWorker,
			wire.CodeInvalidProhibited, wire.CodeInvalidWorker, wire.CodeInvalidSecret, wire.CodeBodyTooLarge, wire.CodeInvalidRules,
			wire.CodeInvalidPolicies, wire.CodeInvalidGroups, wire.CodeACLDisabled, wire.CodeBackupUnverified},
		http.StatusForbidden: {wire.CodeDisabled, wire.CodeProhibited, wire.CodePermissionDenied, wire.CodeACLNotFound,
			wire.CodeACLBootstrapped},
		http.StatusNotFound: {wire.CodeNotFound, wire.CodeLeaseLost},
		http.StatusConflict: {wire.CodeWrongSecret, wire.CodeHeld, wire.CodeNothingNew, wire.CodeNotCaughtUp, wire.CodeUnsafeRemoval,
			wire.CodeGossipPlaintext, wire.CodeNotHolder, wire.CodeCASFailed},
		http.StatusGone:                {wire.CodeCompacted},
		http.StatusTooManyRequests:     {wire.CodeOverloaded},
		http.StatusInternalServerError: {wire.CodeInternal},
		http.StatusServiceUnavailable:  {wire.CodeTooManyConnections, wire.CodeNoLeader, wire.CodeLeadershipLost},
		http.StatusGatewayTimeout:      {wire.CodeTimeout},
	} {
		for _, code := range codes {
			m[code] = status
		}
	}
	return m
}()

// sentinelCodes maps the cluster's sentinel errors to their codes, first
// match wins; an error that matches none is internal.
var sentinelCodes = []struct {
	err  error
	code string
}{
	{cluster.ErrPermissionDenied, wire.CodePermissionDenied},
	{cluster.ErrACLNotFound, wire.CodeACLNotFound},
	{cluster.ErrACLBootstrapped, wire.CodeACLBootstrapped},
	{cluster.ErrACLDisabled, wire.CodeACLDisabled},
	{cluster.ErrDisabled, wire.CodeDisabled},
	{cluster.ErrProhibited, wire.CodeProhibited},
	{cluster.ErrNotFound, wire.CodeNotFound},
	{cluster.ErrNotCaughtUp, wire.CodeNotCaughtUp},
	{cluster.ErrUnsafeRemoval, wire.CodeUnsafeRemoval},
	{cluster.ErrOverloaded, wire.CodeOverloaded},
	{cluster.ErrGossipPlaintext, wire.CodeGossipPlaintext},
	{cluster.ErrLeadershipLost, wire.CodeLeadershipLost},
	{cluster.ErrNotLeader, wire.CodeNoLeader},
	{cluster.ErrNotReady, wire.CodeNoLeader},
	{cluster.ErrShutdown, wire.CodeNoLeader},
	{cluster.ErrTimeout, wire.CodeTimeout},
	{context.DeadlineExceeded, wire.CodeTimeout},
}

// apiError is an error this package answers with a given code, and with
// the code's status unless status is set.
type apiError struct {
	status int
	code   string
	field  string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

// httpStatus is the status e is answered with.
func (e *apiError) httpStatus() int {
	if e.status != 0 {
		return e.status
	}
	return codeStatus[e.code]
}

func badRequest(code, field, msg string) error {
	return &apiError{code: code, field: field, msg: msg}
}

// writeError answers err with its code and status. A request whose client
// went away gets no answer.
func writeError(w http.ResponseWriter, err error) {
	body, status, answer := errorBody(err)
	if !answer {
		return // the client went away: nobody to answer
	}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, body)
}

// errorBody is the answer to err: its body (code and message) and status;
// answer is false for a request whose client went away.
func errorBody(err error) (body wire.ErrorBody, status int, answer bool) {
	var (
		api  *apiError
		held *cluster.HeldError
		lost *cluster.LostError
		inv  *cluster.InvalidError
		nh   *cluster.NotHolderError
		cas  *cluster.CASError
		ws   *cluster.SecretError
	)
	body = wire.ErrorBody{Message: err.Error(), Error: wire.CodeInternal}
	switch {
	case errors.As(err, &api):
		status, body.Error, body.Field = api.httpStatus(), api.code, api.field
	case errors.As(err, &held):
		body.Error, body.Lease = wire.CodeHeld, leaseOut(cluster.LeaseView{Lease: held.Lease})
		if held.WrongSecret {
			body.Field = "secret"
		}
	case errors.As(err, &ws):
		body.Error, body.Field = wire.CodeWrongSecret, "secret"
	case errors.As(err, &nh):
		body.Error, body.Lease = wire.CodeNotHolder, leaseOut(cluster.LeaseView{Lease: nh.Lease})
	case errors.As(err, &cas):
		body.Error = wire.CodeCASFailed
		if cas.Group != nil {
			g := summary(cas.Group)
			body.Group = &g
		}
	case errors.As(err, &lost):
		body.Error, body.Reason = wire.CodeLeaseLost, lost.Reason
	case errors.As(err, &inv) && errors.Is(err, fsm.ErrUnverifiedBackup):
		body.Error, body.Field = wire.CodeBackupUnverified, inv.Field
	case errors.As(err, &inv):
		body.Error, body.Field = fieldCode(inv.Field), inv.Field
	default:
		code := ""
		for _, sc := range sentinelCodes {
			if errors.Is(err, sc.err) {
				code = sc.code
				break
			}
		}
		switch {
		case code != "":
			body.Error = code
		case errors.Is(err, context.Canceled):
			return body, 0, false
		}
	}
	if status == 0 {
		status = codeStatus[body.Error]
	}
	if status == 0 { // a code missing from codeStatus: a bug, said as one
		status, body.Message = http.StatusInternalServerError, "no status for code "+body.Error+": "+body.Message
	}
	return body, status, true
}
