package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/tenure-io/tenure/cluster"
)

// Error codes: stable, part of the API. The client maps them back to its
// sentinel errors.
const (
	codeHeld           = "held"
	codeLeaseLost      = "lease_lost"
	codeNotFound       = "not_found"
	codeInvalidBody    = "invalid_body"
	codeBodyTooLarge   = "body_too_large"
	codeInvalidIndex   = "invalid_index"
	codeInvalidQuery   = "invalid_query"
	codeOverloaded     = "overloaded"
	codeNoLeader       = "no_leader"
	codeLeadershipLost = "leadership_lost"
	codeTimeout        = "timeout"
	codeInternal       = "internal"
	codeDisabled       = "disabled"
	codeProhibited     = "prohibited"
)

// fieldCodes maps the field named by a cluster.InvalidError to its code.
var fieldCodes = map[string]string{
	"key":      "invalid_key",
	"holder":   "invalid_holder",
	"ttl":      "invalid_ttl",
	"wait":     "invalid_wait",
	"token":    "invalid_token",
	"metadata": "invalid_metadata",
	// Groups, controls and workers.
	"name":           "invalid_name",
	"keys":           "invalid_keys",
	"count":          "invalid_count",
	"prefix":         "invalid_prefix",
	"add":            "invalid_keys",
	"max_per_worker": "invalid_max_per_worker",
	"prohibited":     "invalid_prohibited",
	"worker":         "invalid_worker",
}

// apiError is an error this package answers with a given status and code.
type apiError struct {
	status int
	code   string
	field  string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(code, field, msg string) error {
	return &apiError{status: http.StatusBadRequest, code: code, field: field, msg: msg}
}

// writeError answers err with its status and code. A request whose client
// went away gets no answer.
func writeError(w http.ResponseWriter, err error) {
	var (
		api  *apiError
		held *cluster.HeldError
		lost *cluster.LostError
		inv  *cluster.InvalidError
	)
	body := errorJSON{Message: err.Error()}
	status := http.StatusInternalServerError
	switch {
	case errors.As(err, &api):
		status, body.Error, body.Field = api.status, api.code, api.field
	case errors.As(err, &held):
		status, body.Error, body.Lease = http.StatusConflict, codeHeld, leaseOut(cluster.LeaseView{Lease: held.Lease})
	case errors.As(err, &lost):
		status, body.Error, body.Reason = http.StatusNotFound, codeLeaseLost, lost.Reason
	case errors.As(err, &inv):
		status, body.Field = http.StatusBadRequest, inv.Field
		body.Error = fieldCodes[inv.Field]
		if body.Error == "" {
			body.Error = codeInvalidBody
		}
	case errors.Is(err, cluster.ErrDisabled):
		status, body.Error = http.StatusForbidden, codeDisabled
	case errors.Is(err, cluster.ErrProhibited):
		status, body.Error = http.StatusForbidden, codeProhibited
	case errors.Is(err, cluster.ErrNotFound):
		status, body.Error = http.StatusNotFound, codeNotFound
	case errors.Is(err, cluster.ErrOverloaded):
		status, body.Error = http.StatusTooManyRequests, codeOverloaded
		w.Header().Set("Retry-After", "1")
	case errors.Is(err, cluster.ErrLeadershipLost):
		status, body.Error = http.StatusServiceUnavailable, codeLeadershipLost
		w.Header().Set("Retry-After", "1")
	case errors.Is(err, cluster.ErrNotLeader), errors.Is(err, cluster.ErrNotReady), errors.Is(err, cluster.ErrShutdown):
		status, body.Error = http.StatusServiceUnavailable, codeNoLeader
		w.Header().Set("Retry-After", "1")
	case errors.Is(err, context.DeadlineExceeded):
		status, body.Error = http.StatusGatewayTimeout, codeTimeout
	case errors.Is(err, context.Canceled):
		return
	default:
		body.Error = codeInternal
	}
	writeJSON(w, status, body)
}
