package httpapi

import (
	"time"

	"github.com/tenure-io/tenure/cluster"
)

// leaseJSON is a lease on the wire.
type leaseJSON struct {
	Key         string            `json:"key"`
	Holder      string            `json:"holder"`
	Token       uint64            `json:"token"`
	TTL         string            `json:"ttl"`
	State       string            `json:"state"`
	ExpiresIn   string            `json:"expires_in,omitempty"`
	AcquiredAt  string            `json:"acquired_at,omitempty"`
	RenewedAt   string            `json:"renewed_at,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	Reason      string            `json:"reason,omitempty"`
	ModifyIndex uint64            `json:"modify_index"`
}

const timeFormat = time.RFC3339Nano

func leaseOut(v cluster.LeaseView) *leaseJSON {
	l := v.Lease
	out := &leaseJSON{
		Key:         l.Key,
		Holder:      l.Holder,
		Token:       l.Token,
		TTL:         l.TTL.String(),
		State:       "free",
		Metadata:    l.Metadata,
		Reason:      l.Reason.String(),
		ModifyIndex: l.ModifyIndex,
	}
	if l.Held {
		out.State = "held"
	}
	if l.AcquiredAt != 0 {
		out.AcquiredAt = time.Unix(0, l.AcquiredAt).UTC().Format(timeFormat)
	}
	if v.Tracked {
		out.ExpiresIn = v.ExpiresIn.Round(time.Millisecond).String()
		out.RenewedAt = v.RenewedAt.UTC().Format(timeFormat)
	}
	return out
}

type acquireBody struct {
	Holder   string            `json:"holder"`
	TTL      string            `json:"ttl"`
	Wait     string            `json:"wait"`
	Metadata map[string]string `json:"metadata"`
}

type renewBody struct {
	Holder string `json:"holder"`
	Token  uint64 `json:"token"`
}

type releaseBody struct {
	Holder string `json:"holder"`
	Token  uint64 `json:"token"`
}

type leaseRefJSON struct {
	Key   string `json:"key"`
	Token uint64 `json:"token"`
}

type renewManyBody struct {
	Holder string         `json:"holder"`
	Leases []leaseRefJSON `json:"leases"`
}

type renewResultJSON struct {
	Key    string     `json:"key"`
	Token  uint64     `json:"token"`
	OK     bool       `json:"ok"`
	Lease  *leaseJSON `json:"lease,omitempty"`
	Error  string     `json:"error,omitempty"`
	Reason string     `json:"reason,omitempty"`
}

type errorJSON struct {
	Error   string     `json:"error"`
	Message string     `json:"message"`
	Field   string     `json:"field,omitempty"`
	Reason  string     `json:"reason,omitempty"`
	Lease   *leaseJSON `json:"lease,omitempty"`
}

type serverJSON struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	HTTPAddr string `json:"http_addr,omitempty"`
	Suffrage string `json:"suffrage"`
	Leader   bool   `json:"leader"`
}

type statusJSON struct {
	NodeID         string       `json:"node_id"`
	Role           string       `json:"role"`
	LeaderID       string       `json:"leader_id"`
	LeaderHTTPAddr string       `json:"leader_http_addr"`
	Term           uint64       `json:"term"`
	LastLogIndex   uint64       `json:"last_log_index"`
	CommitIndex    uint64       `json:"commit_index"`
	AppliedIndex   uint64       `json:"applied_index"`
	LastToken      uint64       `json:"last_token"`
	LastContact    string       `json:"last_contact"`
	Ready          bool         `json:"ready"`
	Servers        []serverJSON `json:"servers"`
}

type memberJSON struct {
	Name   string             `json:"name"`
	Addr   string             `json:"addr"`
	Status string             `json:"status"`
	Role   string             `json:"role"`
	Meta   cluster.MemberMeta `json:"meta"`
}
