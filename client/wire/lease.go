package wire

import (
	"encoding/json"
	"fmt"
	"time"
)

// LeaseState is the state of a key: held or free.
type LeaseState string

// The states of a key.
const (
	StateHeld LeaseState = "held"
	StateFree LeaseState = "free"
)

// LeaseInfo is a lease as the API reports it. A free key keeps its last
// holder and token, and Reason says why it is free.
//
// LeaseInfo is a snapshot taken by the server; nothing in it is a promise
// about the future. In particular ExpiresIn is measured on the leader and
// must not be used to decide whether the caller still holds the lease:
// count from client.Meta.SentAt instead.
type LeaseInfo struct {
	Key    string
	Holder string
	// Token is the fencing token of the acquisition.
	Token uint64
	TTL   time.Duration
	State LeaseState
	// ExpiresIn is the time left before the leader's deadline, as the leader
	// saw it when answering. It is zero on free keys and on stale reads
	// served by a follower (HasExpiresIn tells the two zeroes apart).
	ExpiresIn    time.Duration
	HasExpiresIn bool
	// AcquiredAt is the leader's wall clock when the acquisition was
	// proposed; RenewedAt the last renewal (zero when unknown). For people,
	// not for deciding anything.
	AcquiredAt time.Time
	RenewedAt  time.Time
	Metadata   map[string]string
	// Reason says why a free key is free: ReasonReleased, ReasonExpired,
	// or, when an operator ended the lease, ReasonRevoked, ReasonDisabled
	// or ReasonProhibited.
	Reason string
	// Ending, on a held lease, says that an operator ended it
	// (ReasonRevoked, ReasonDisabled, ReasonProhibited): its renewals are
	// refused and the key frees when ExpiresIn runs out. "" otherwise.
	Ending string
	// ModifyIndex is the Raft index that last changed the key.
	ModifyIndex uint64
	// Secret is the lease secret, in the answer of an acquire only (the
	// one the request carried, or the one the server made when it carried
	// none). Renewing, releasing, acquiring again and changing the
	// metadata need it. No read ever returns it: it is empty in every
	// other answer.
	Secret string
}

// Held reports whether the lease was held when the server answered.
func (l *LeaseInfo) Held() bool { return l.State == StateHeld }

// leaseJSON is the wire form of a lease, as the server writes it and this
// package reads it.
type leaseJSON struct {
	Key         string            `json:"key"`
	Holder      string            `json:"holder"`
	Token       uint64            `json:"token"`
	TTL         string            `json:"ttl"`
	State       LeaseState        `json:"state"`
	ExpiresIn   string            `json:"expires_in,omitempty"`
	AcquiredAt  string            `json:"acquired_at,omitempty"`
	RenewedAt   string            `json:"renewed_at,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	Reason      string            `json:"reason,omitempty"`
	Ending      string            `json:"ending,omitempty"`
	ModifyIndex uint64            `json:"modify_index"`
	Secret      string            `json:"secret,omitempty"`
}

// MarshalJSON encodes the lease in the wire form of the API (appendJSON).
func (l LeaseInfo) MarshalJSON() ([]byte, error) {
	return l.appendJSON(make([]byte, 0, 320)), nil // a lease's JSON is about 300 bytes
}

// UnmarshalJSON decodes the wire form of the API. Unknown fields are
// ignored so that newer servers can add some.
func (l *LeaseInfo) UnmarshalJSON(data []byte) error {
	var w leaseJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	out, err := w.info()
	if err != nil {
		return err
	}
	*l = out
	return nil
}

// info is the lease that w, its wire form, describes.
func (w *leaseJSON) info() (LeaseInfo, error) {
	out := LeaseInfo{
		Key: w.Key, Holder: w.Holder, Token: w.Token, State: w.State,
		Metadata: w.Metadata, Reason: w.Reason, Ending: w.Ending, ModifyIndex: w.ModifyIndex, Secret: w.Secret,
	}
	var err error
	if out.TTL, err = parseDuration("ttl", w.TTL); err != nil {
		return LeaseInfo{}, err
	}
	if w.ExpiresIn != "" {
		out.HasExpiresIn = true
		if out.ExpiresIn, err = parseDuration("expires_in", w.ExpiresIn); err != nil {
			return LeaseInfo{}, err
		}
	}
	if out.AcquiredAt, err = parseTime("acquired_at", w.AcquiredAt); err != nil {
		return LeaseInfo{}, err
	}
	if out.RenewedAt, err = parseTime("renewed_at", w.RenewedAt); err != nil {
		return LeaseInfo{}, err
	}
	return out, nil
}

func parseDuration(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("lease field %s: %w", field, err)
	}
	return d, nil
}

func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("lease field %s: %w", field, err)
	}
	return t, nil
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
