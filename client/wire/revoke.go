package wire

import (
	"encoding/json"
	"fmt"
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
