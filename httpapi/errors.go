package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

// fieldCodes maps the field named by a cluster.InvalidError, or by a JSON
// type error, to its code. The codes are package client's: it owns the
// contract.
var fieldCodes = map[string]string{
	"key":      client.CodeInvalidKey,
	"holder":   client.CodeInvalidHolder,
	"ttl":      client.CodeInvalidTTL,
	"wait":     client.CodeInvalidWait,
	"token":    client.CodeInvalidToken,
	"metadata": client.CodeInvalidMetadata,
	"secret":   client.CodeInvalidSecret,
	// Groups, controls and workers.
	"name":           client.CodeInvalidName,
	"keys":           client.CodeInvalidKeys,
	"count":          client.CodeInvalidCount,
	"prefix":         client.CodeInvalidPrefix,
	"add":            client.CodeInvalidKeys,
	"max_per_worker": client.CodeInvalidMaxPerWorker,
	"prohibited":     client.CodeInvalidProhibited,
	"prohibit":       client.CodeInvalidProhibited,
	"allow":          client.CodeInvalidProhibited,
	"worker":         client.CodeInvalidWorker,
	"stuck_grace":    client.CodeInvalidBody,
	"min_workers":    client.CodeInvalidBody,
	"threshold":      client.CodeInvalidQuery,
	// ACLs.
	"rules":         client.CodeInvalidRules,
	"policies":      client.CodeInvalidPolicies,
	"groups":        client.CodeInvalidGroups,
	"holder_prefix": client.CodeInvalidHolder,
}

// fieldCode is the code of a bad field: its own, or invalid_body.
func fieldCode(field string) string {
	if c := fieldCodes[field]; c != "" {
		return c
	}
	return client.CodeInvalidBody
}

// codeStatus is the HTTP status of every error code this package answers
// with: the codes are package client's, and a test checks that the two
// lists are the same.
var codeStatus = map[string]int{
	client.CodeInvalidKey:          http.StatusBadRequest,
	client.CodeInvalidHolder:       http.StatusBadRequest,
	client.CodeInvalidTTL:          http.StatusBadRequest,
	client.CodeInvalidWait:         http.StatusBadRequest,
	client.CodeInvalidToken:        http.StatusBadRequest,
	client.CodeInvalidMetadata:     http.StatusBadRequest,
	client.CodeInvalidIndex:        http.StatusBadRequest,
	client.CodeInvalidQuery:        http.StatusBadRequest,
	client.CodeInvalidBody:         http.StatusBadRequest,
	client.CodeInvalidName:         http.StatusBadRequest,
	client.CodeInvalidKeys:         http.StatusBadRequest,
	client.CodeInvalidCount:        http.StatusBadRequest,
	client.CodeInvalidPrefix:       http.StatusBadRequest,
	client.CodeInvalidMaxPerWorker: http.StatusBadRequest,
	client.CodeInvalidProhibited:   http.StatusBadRequest,
	client.CodeInvalidWorker:       http.StatusBadRequest,
	client.CodeInvalidSecret:       http.StatusBadRequest,
	client.CodeWrongSecret:         http.StatusConflict,
	client.CodeBodyTooLarge:        http.StatusBadRequest,
	client.CodeDisabled:            http.StatusForbidden,
	client.CodeProhibited:          http.StatusForbidden,
	client.CodeNotFound:            http.StatusNotFound,
	client.CodeLeaseLost:           http.StatusNotFound,
	client.CodeHeld:                http.StatusConflict,
	client.CodeNothingNew:          http.StatusConflict,
	client.CodeNotCaughtUp:         http.StatusConflict,
	client.CodeUnsafeRemoval:       http.StatusConflict,
	client.CodeOverloaded:          http.StatusTooManyRequests,
	client.CodeTooManyConnections:  http.StatusServiceUnavailable,
	client.CodeInternal:            http.StatusInternalServerError,
	client.CodeNoLeader:            http.StatusServiceUnavailable,
	client.CodeLeadershipLost:      http.StatusServiceUnavailable,
	client.CodeTimeout:             http.StatusGatewayTimeout,
	client.CodeGossipPlaintext:     http.StatusConflict,
	client.CodeInvalidRules:        http.StatusBadRequest,
	client.CodeInvalidPolicies:     http.StatusBadRequest,
	client.CodeInvalidGroups:       http.StatusBadRequest,
	client.CodePermissionDenied:    http.StatusForbidden,
	client.CodeACLNotFound:         http.StatusForbidden,
	client.CodeACLBootstrapped:     http.StatusForbidden,
	client.CodeACLDisabled:         http.StatusBadRequest,
	client.CodeNotHolder:           http.StatusConflict,
	client.CodeCASFailed:           http.StatusConflict,
	client.CodeCompacted:           http.StatusGone,
	client.CodeBackupUnverified:    http.StatusBadRequest,
}

// sentinelCodes maps the cluster's sentinel errors to their codes, first
// match wins; an error that matches none is internal.
var sentinelCodes = []struct {
	err  error
	code string
}{
	{cluster.ErrPermissionDenied, client.CodePermissionDenied},
	{cluster.ErrACLNotFound, client.CodeACLNotFound},
	{cluster.ErrACLBootstrapped, client.CodeACLBootstrapped},
	{cluster.ErrACLDisabled, client.CodeACLDisabled},
	{cluster.ErrDisabled, client.CodeDisabled},
	{cluster.ErrProhibited, client.CodeProhibited},
	{cluster.ErrNotFound, client.CodeNotFound},
	{cluster.ErrNotCaughtUp, client.CodeNotCaughtUp},
	{cluster.ErrUnsafeRemoval, client.CodeUnsafeRemoval},
	{cluster.ErrOverloaded, client.CodeOverloaded},
	{cluster.ErrGossipPlaintext, client.CodeGossipPlaintext},
	{cluster.ErrLeadershipLost, client.CodeLeadershipLost},
	{cluster.ErrNotLeader, client.CodeNoLeader},
	{cluster.ErrNotReady, client.CodeNoLeader},
	{cluster.ErrShutdown, client.CodeNoLeader},
	{cluster.ErrTimeout, client.CodeTimeout},
	{context.DeadlineExceeded, client.CodeTimeout},
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
func errorBody(err error) (body client.ErrorBody, status int, answer bool) {
	var (
		api  *apiError
		held *cluster.HeldError
		lost *cluster.LostError
		inv  *cluster.InvalidError
		nh   *cluster.NotHolderError
		cas  *cluster.CASError
		ws   *cluster.SecretError
	)
	body = client.ErrorBody{Message: err.Error(), Error: client.CodeInternal}
	switch {
	case errors.As(err, &api):
		status, body.Error, body.Field = api.httpStatus(), api.code, api.field
	case errors.As(err, &held):
		body.Error, body.Lease = client.CodeHeld, leaseOut(cluster.LeaseView{Lease: held.Lease})
		if held.WrongSecret {
			body.Field = "secret"
		}
	case errors.As(err, &ws):
		body.Error, body.Field = client.CodeWrongSecret, "secret"
	case errors.As(err, &nh):
		body.Error, body.Lease = client.CodeNotHolder, leaseOut(cluster.LeaseView{Lease: nh.Lease})
	case errors.As(err, &cas):
		body.Error = client.CodeCASFailed
		if cas.Group != nil {
			g := summary(cas.Group)
			body.Group = &g
		}
	case errors.As(err, &lost):
		body.Error, body.Reason = client.CodeLeaseLost, lost.Reason
	case errors.As(err, &inv) && errors.Is(err, fsm.ErrUnverifiedBackup):
		body.Error, body.Field = client.CodeBackupUnverified, inv.Field
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
