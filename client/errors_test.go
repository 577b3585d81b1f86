package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

var allSentinels = []error{ErrHeld, ErrLeaseLost, ErrNotFound, ErrInvalid, ErrNoLeader, ErrLeadershipLost, ErrOverloaded, ErrTimeout,
	ErrPermissionDenied, ErrACLNotFound, ErrACLBootstrapped, ErrACLDisabled}

func TestAPIErrorIsMapsCodesToSentinels(t *testing.T) {
	type codeCase struct {
		name   string
		status int
		code   string
		want   error // nil: no sentinel matches
	}
	tests := []codeCase{
		{"held", 409, wire.CodeHeld, ErrHeld},
		{"lease lost", 404, wire.CodeLeaseLost, ErrLeaseLost},
		{"not found", 404, wire.CodeNotFound, ErrNotFound},
		{"future 400 code", 400, "invalid_something_new", ErrInvalid},
		{"no leader", 503, wire.CodeNoLeader, ErrNoLeader},
		{"leadership lost", 503, wire.CodeLeadershipLost, ErrLeadershipLost},
		{"overloaded", 429, wire.CodeOverloaded, ErrOverloaded},
		{"timeout", 504, wire.CodeTimeout, ErrTimeout},
		{"internal", 500, wire.CodeInternal, nil},
		{"permission denied", 403, wire.CodePermissionDenied, ErrPermissionDenied},
		{"acl token not found", 403, wire.CodeACLNotFound, ErrACLNotFound},
		{"acl bootstrapped", 403, wire.CodeACLBootstrapped, ErrACLBootstrapped},
		{"acl disabled", 400, wire.CodeACLDisabled, ErrACLDisabled},
		{"unknown code", 418, "teapot", nil},
		{"bare 503 from a proxy", 503, "", ErrNoLeader},
		{"bare 429", 429, "", ErrOverloaded},
		{"bare 504", 504, "", ErrTimeout},
		{"bare 404 is not a missing key", 404, "", nil},
		{"renew-many entry", 0, wire.CodeLeaseLost, ErrLeaseLost},
	}
	// Every code of a refused input is ErrInvalid.
	for _, code := range []string{wire.CodeInvalidKey, wire.CodeInvalidHolder, wire.CodeInvalidTTL, wire.CodeInvalidWait,
		wire.CodeInvalidToken, wire.CodeInvalidMetadata, wire.CodeInvalidIndex, wire.CodeInvalidQuery, wire.CodeInvalidBody,
		wire.CodeBodyTooLarge, wire.CodeInvalidRules} {
		tests = append(tests, codeCase{strings.ReplaceAll(code, "_", " "), 400, code, ErrInvalid})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error = &APIError{StatusCode: tt.status, Code: tt.code}
			wrapped := fmt.Errorf("giving up after 2 attempts: %w", err)
			for _, s := range allSentinels {
				if got, want := errors.Is(wrapped, s), s == tt.want; got != want {
					t.Errorf("errors.Is(%v, %v) = %v, want %v", err, s, got, want)
				}
			}
		})
	}
}

func TestAPIErrorDetailsThroughErrorsAs(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch r.URL.Path {
		case "/v1/leases/held":
			lease := testLease("held")
			writeJSON(w, 409, map[string]any{"error": "held", "message": "held by h1", "lease": lease})
		case "/v1/renew/lost":
			writeJSON(w, 404, map[string]any{"error": "lease_lost", "message": "lease expired", "reason": "expired"})
		case "/v1/leases/bad":
			writeJSON(w, 400, map[string]any{"error": "invalid_ttl", "message": "ttl below min-ttl", "field": "ttl"})
		}
	})
	c, _ := newTestClient(t, srv.URL)
	ctx := context.Background()

	_, _, err := c.Leases().Acquire(ctx, "held", AcquireRequest{Holder: "h2", TTL: time.Second})
	var ae *APIError
	if !errors.Is(err, ErrHeld) || !errors.As(err, &ae) {
		t.Fatalf("acquire of a held key: err = %v, want ErrHeld as *APIError", err)
	}
	if ae.StatusCode != 409 || ae.Lease == nil || ae.Lease.Holder != "h1" || ae.Lease.Token != 17 {
		t.Errorf("held error = %+v, lease %+v; want status 409 and the current lease of h1 token 17", ae, ae.Lease)
	}

	_, _, err = c.Leases().Renew(ctx, "lost", "h1", 3)
	if !errors.Is(err, ErrLeaseLost) || !errors.As(err, &ae) || ae.Reason != ReasonExpired {
		t.Errorf("renew of a lost lease: err = %v, want ErrLeaseLost with reason %q", err, ReasonExpired)
	}

	_, _, err = c.Leases().Acquire(ctx, "bad", AcquireRequest{Holder: "h1", TTL: time.Millisecond})
	if !errors.Is(err, ErrInvalid) || !errors.As(err, &ae) || ae.Field != "ttl" || ae.Code != wire.CodeInvalidTTL {
		t.Errorf("acquire with a bad ttl: err = %v, want ErrInvalid with field ttl", err)
	}
}

func TestAPIErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  *APIError
		want string
	}{
		{"code and message", &APIError{StatusCode: 409, Code: "held", Message: "held by h1"}, "held: held by h1"},
		{"reason", &APIError{Code: "lease_lost", Message: "gone", Reason: "expired"}, "lease_lost (expired): gone"},
		{"field not in message", &APIError{Code: "invalid_body", Message: "unknown field", Field: "tll"}, "invalid_body: unknown field (field tll)"},
		{"field in message", &APIError{Code: "invalid_ttl", Message: "ttl too short", Field: "ttl"}, "invalid_ttl: ttl too short"},
		{"no code", &APIError{StatusCode: 502, Message: "Bad Gateway"}, "http status 502: Bad Gateway"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name, in string
		want     time.Duration
	}{
		{"absent", "", 0},
		{"seconds", "3", 3 * time.Second},
		{"zero", "0", 0},
		{"http date", now.Add(5 * time.Second).Format(http.TimeFormat), 5 * time.Second},
		{"date in the past", now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"garbage", "soon", 0},
		{"negative", "-1", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseRetryAfter(tt.in, now); got != tt.want {
				t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// Every code of the API is turned back into its sentinel (or none, on
// purpose): the map names each code of wire.ErrorCodes, and no other.
func TestEveryCodeHasItsSentinelEntry(t *testing.T) {
	var mapped []string
	for code := range codeSentinels {
		mapped = append(mapped, code)
	}
	slices.Sort(mapped)
	if got, want := strings.Join(mapped, " "), strings.Join(wire.ErrorCodes(), " "); got != want {
		t.Errorf("codes with a sentinel entry:\n  %s\nwire.ErrorCodes():\n  %s", got, want)
	}
}
