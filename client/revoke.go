package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// RevokeResult is the answer of POST /v1/revoke/{key} and of
// POST /v1/revoke?holder=H: the leases the call ended, in key order (none
// when the key was already free, or the holder held nothing).
type RevokeResult struct {
	Revoked []RevokedLease `json:"revoked"`
}

// RevokedLease is a lease that an operator's revoke, disable or prohibit
// ended.
//
// Unless Forced, the holder's renewals are refused from the moment of the
// call (lease_lost with Reason), and the key frees, and goes to the next
// waiter, after FreesIn: when the holder's current deadline on the leader
// passes, the earliest moment the holder is sure to have stopped. No two
// holders overlap. Forced: the key was freed at once (FreesIn is 0); the
// old holder may still be working, and exclusion rests on fencing alone.
// With ACLs on, Holder and Token are empty unless the ACL token has read
// on the key.
type RevokedLease struct {
	Key    string
	Holder string
	Token  uint64
	// Reason is ReasonRevoked, ReasonDisabled or ReasonProhibited.
	Reason  string
	Forced  bool
	FreesIn time.Duration
}

// revokedLeaseJSON is RevokedLease on the wire: durations are Go duration
// strings.
type revokedLeaseJSON struct {
	Key     string `json:"key"`
	Holder  string `json:"holder,omitempty"`
	Token   uint64 `json:"token,omitempty"`
	Reason  string `json:"reason"`
	Forced  bool   `json:"forced"`
	FreesIn string `json:"frees_in"`
}

// MarshalJSON writes the wire form.
func (r RevokedLease) MarshalJSON() ([]byte, error) {
	return json.Marshal(revokedLeaseJSON{Key: r.Key, Holder: r.Holder, Token: r.Token, Reason: r.Reason,
		Forced: r.Forced, FreesIn: r.FreesIn.String()})
}

// UnmarshalJSON reads the wire form.
func (r *RevokedLease) UnmarshalJSON(b []byte) error {
	var w revokedLeaseJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	d, err := time.ParseDuration(w.FreesIn)
	if err != nil {
		return fmt.Errorf("revoked lease field frees_in: %w", err)
	}
	*r = RevokedLease{Key: w.Key, Holder: w.Holder, Token: w.Token, Reason: w.Reason, Forced: w.Forced, FreesIn: d}
	return nil
}

// RevokeKey ends the lease of key whoever holds it, and answers the lease
// it ended (none if the key is free). It fails with ErrNotFound when the
// key was never seen. See RevokedLease for what happens to the holder.
// Like Revoke it names no token: it is retried only when the server surely
// did not act. WithForce frees the key at once instead of when the
// holder's deadline passes: only for a holder known to be dead, since
// otherwise two holders may act at once, and only a store that checks
// fencing tokens (Fence) keeps the old one out.
func (a *LeasesAPI) RevokeKey(ctx context.Context, key string, opts ...OperatorOption) ([]RevokedLease, *Meta, error) {
	p, err := leasePath("/v1/revoke/", key)
	if err != nil {
		return nil, nil, err
	}
	return a.revoke(ctx, p, operatorQuery(opts))
}

// RevokeHolder ends every lease that holder holds (take a dead or
// misbehaving process out), as RevokeKey ends one. The ACL token needs the
// revoke right on every key (a rule on the prefix "").
func (a *LeasesAPI) RevokeHolder(ctx context.Context, holder string, opts ...OperatorOption) ([]RevokedLease, *Meta, error) {
	if holder == "" {
		return nil, nil, fmt.Errorf("%w: holder is empty", ErrInvalid)
	}
	q := operatorQuery(opts)
	q["holder"] = holder
	return a.revoke(ctx, "/v1/revoke", q)
}

func (a *LeasesAPI) revoke(ctx context.Context, path string, q map[string]string) ([]RevokedLease, *Meta, error) {
	resp, err := a.c.do(ctx, &request{method: http.MethodPost, path: path, query: q, unsafeRetry: true})
	if err != nil {
		return nil, nil, err
	}
	var out RevokeResult
	if len(resp.body) == 0 {
		return nil, resp.meta, nil // a server older than the answer's body: 204
	}
	if err := json.Unmarshal(resp.body, &out); err != nil {
		return nil, nil, fmt.Errorf("decode revoke result: %w", err)
	}
	return out.Revoked, resp.meta, nil
}
