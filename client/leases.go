package client

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// LeasesAPI makes the lease calls of the HTTP API, one request each (with
// retries). Get it from Client.Leases. Every call but Revoke is idempotent
// on the server, so it is retried on connection errors, 429, 502, 503 and
// 504, including when the outcome of an attempt is unknown.
//
// Acquisitions, renewals and releases carry a lease secret: the Client's
// (Client.LeaseSecret) unless WithSecret names another. Only the secret a
// lease was acquired under renews, releases or keeps it.
type LeasesAPI struct {
	c      *Client
	secret string
}

// Leases returns the lease calls of c, under c's lease secret.
func (c *Client) Leases() *LeasesAPI { return &LeasesAPI{c: c, secret: c.cfg.LeaseSecret} }

// WithSecret returns the lease calls of a under secret instead: for a lease
// that another Client, a raw HTTP caller or a command acquired (the
// secret in its acquire's answer, LeaseInfo.Secret).
func (a *LeasesAPI) WithSecret(secret string) *LeasesAPI {
	return &LeasesAPI{c: a.c, secret: secret}
}

// AcquireRequest is the body of an acquire.
type AcquireRequest struct {
	// Holder is the caller's identity (see NewHolderID). Required.
	Holder string
	// TTL is the lifetime of the lease, within the server's bounds.
	TTL time.Duration
	// Wait, when positive, queues the request behind the current holder
	// until the key frees or Wait ends. The attempt's timeout grows by Wait.
	Wait time.Duration
	// Metadata is stored with the lease (at most 16 entries).
	Metadata map[string]string
	// Secret is the lease secret; empty means the LeasesAPI's (the
	// Client's, unless WithSecret). The answer's LeaseInfo.Secret is it.
	Secret string
}

// RenewResult is the outcome for one lease of RenewMany.
type RenewResult struct {
	Key   string
	Token uint64
	// Lease is the renewed lease; nil when Err is set.
	Lease *LeaseInfo
	// Err is nil when the lease was renewed. Otherwise it is an *APIError
	// (StatusCode 0) that matches ErrLeaseLost, with the Reason.
	Err error
}

// QueryOptions set the consistency of a read and make it blocking.
type QueryOptions struct {
	// Stale lets any node answer from its local state: faster and
	// available without a leader, but possibly behind (Meta.LastContact
	// says by how much).
	Stale bool
	// WaitIndex, when positive, makes the read blocking: the server answers
	// once the state behind the query has changed past this index
	// (Meta.Index of a previous answer), or when WaitTime ends.
	WaitIndex uint64
	// WaitTime bounds a blocking read; zero means the server's default
	// (5m). It is added to the per-attempt timeout.
	WaitTime time.Duration
}

// serverDefaultWait is the wait the server applies to a blocking read that
// names no wait.
const serverDefaultWait = 5 * time.Minute

// apply adds q to the query parameters and returns the attempt's extra wait.
func (q *QueryOptions) apply(params map[string]string) time.Duration {
	if q == nil {
		return 0
	}
	if q.Stale {
		params["stale"] = "true"
	}
	var wait time.Duration
	if q.WaitIndex > 0 {
		params["index"] = strconv.FormatUint(q.WaitIndex, 10)
		wait = serverDefaultWait
	}
	if q.WaitTime > 0 {
		params["wait"] = q.WaitTime.String()
		wait = q.WaitTime
	}
	return wait
}

// ListOptions filter a list. Empty fields do not filter.
type ListOptions struct {
	Prefix string
	State  LeaseState
	Holder string
}

// Acquire acquires key for req.Holder under the lease secret. It returns
// the lease with Meta.Created true for a new grant, false when req.Holder
// already held it under the same secret (the same token, the deadline
// restarted). When another holder has the key, or req.Holder under another
// secret, it fails with an *APIError matching ErrHeld whose Lease is the
// current lease. The lease lasts at least req.TTL from Meta.SentAt.
func (a *LeasesAPI) Acquire(ctx context.Context, key string, req AcquireRequest) (*LeaseInfo, *Meta, error) {
	p, err := leasePath("/v1/leases/", key)
	if err != nil {
		return nil, nil, err
	}
	body := wire.AcquireBody{Holder: req.Holder, Metadata: req.Metadata, Secret: cmp.Or(req.Secret, a.secret)}
	if req.TTL > 0 {
		body.TTL = req.TTL.String()
	}
	if req.Wait > 0 {
		body.Wait = req.Wait.String()
	}
	resp, err := a.c.do(ctx, &request{method: http.MethodPut, path: p, body: body, wait: req.Wait})
	if err != nil {
		return nil, nil, err
	}
	var l LeaseInfo
	if err := json.Unmarshal(resp.body, &l); err != nil {
		return nil, nil, fmt.Errorf("decode lease: %w", err)
	}
	resp.meta.Created = resp.status == http.StatusCreated
	return &l, resp.meta, nil
}

// Renew restarts the deadline of the lease (key, holder, token). It fails
// with an *APIError matching ErrLeaseLost, with a Reason, when that lease is
// no longer held, and matching ErrWrongSecret when the lease secret is not
// the lease's. The lease lasts at least its TTL from Meta.SentAt.
func (a *LeasesAPI) Renew(ctx context.Context, key, holder string, token uint64) (*LeaseInfo, *Meta, error) {
	p, err := leasePath("/v1/renew/", key)
	if err != nil {
		return nil, nil, err
	}
	return call[LeaseInfo](ctx, a.c, &request{method: http.MethodPost, path: p, body: wire.LeaseRefBody{Holder: holder, Token: token, Secret: a.secret}}, "lease")
}

// RenewMany renews several leases of holder in one request (at most
// MaxRenewBatch), each under its LeaseRef.Secret or, when that is empty,
// the lease secret. The results are in the order of leases; each has its
// own Err (matching ErrLeaseLost or ErrWrongSecret). The error is only for the request as a whole. Every renewed lease
// lasts at least its TTL from Meta.SentAt.
func (a *LeasesAPI) RenewMany(ctx context.Context, holder string, leases []LeaseRef) ([]RenewResult, *Meta, error) {
	return a.renewMany(ctx, holder, leases, renewCallOptions{})
}

// RenewManyBrief is RenewMany whose answer leaves out each renewed lease:
// every result has its Key, Token and Err, and a nil Lease, so the server
// encodes and the client decodes far less. It is what a holder that only
// needs to know which leases it still holds should use (the keep-alive of
// Acquire does).
func (a *LeasesAPI) RenewManyBrief(ctx context.Context, holder string, leases []LeaseRef) ([]RenewResult, *Meta, error) {
	return a.renewMany(ctx, holder, leases, renewCallOptions{brief: true})
}

// renewCallOptions shape a renewMany call.
type renewCallOptions struct {
	timeout      time.Duration // of each attempt, instead of Config.Timeout (when not 0)
	brief        bool          // answers without the leases
	failoverOnly bool          // retry only the answers of a leader change
	load         *float64      // the holder's total load to report
}

// renewMany is RenewMany as o says.
func (a *LeasesAPI) renewMany(ctx context.Context, holder string, leases []LeaseRef, o renewCallOptions) ([]RenewResult, *Meta, error) {
	if len(leases) == 0 || len(leases) > MaxRenewBatch {
		return nil, nil, fmt.Errorf("%w: renew many needs 1 to %d leases, got %d", ErrInvalid, MaxRenewBatch, len(leases))
	}
	for i, l := range leases {
		if l.Load != nil {
			if err := checkLoad(fmt.Sprintf("leases[%d].load", i), *l.Load); err != nil {
				return nil, nil, err
			}
		}
	}
	if o.load != nil {
		if err := checkLoad("load", *o.load); err != nil {
			return nil, nil, err
		}
	}
	body := wire.RenewManyBody{Holder: holder, Secret: a.secret, Leases: leases, Brief: o.brief, Load: o.load}
	out, meta, err := call[wire.RenewManyResults](ctx, a.c, &request{method: http.MethodPost, path: "/v1/renew", body: body, timeout: o.timeout, failoverOnly: o.failoverOnly}, "renew answer")
	if err != nil {
		return nil, nil, err
	}
	if len(out.Results) != len(leases) {
		return nil, nil, fmt.Errorf("decode renew answer: %d results for %d leases", len(out.Results), len(leases))
	}
	results := make([]RenewResult, len(out.Results))
	for i, r := range out.Results {
		results[i] = RenewResult{Key: r.Key, Token: r.Token, Lease: r.Lease}
		if !r.OK {
			code := r.Error
			if code == "" {
				code = wire.CodeLeaseLost
			}
			results[i].Lease = nil
			results[i].Err = &APIError{Code: code, Message: r.Message, Reason: r.Reason}
		}
	}
	return results, meta, nil
}

// Release frees the lease (key, holder, token) at once. It succeeds also
// when that lease was already gone (Meta.AlreadyGone says so), so a retry
// is safe. A holder and token that never were the key's lease (another
// holder's current token, or a token the key never had) fail with an
// *APIError matching ErrNotHolder whose Lease is the current lease; the
// held lease named with another lease secret fails with one matching
// ErrWrongSecret. The secret travels in the body, never in the URL.
func (a *LeasesAPI) Release(ctx context.Context, key, holder string, token uint64) (*Meta, error) {
	p, err := leasePath("/v1/leases/", key)
	if err != nil {
		return nil, err
	}
	resp, err := a.c.do(ctx, &request{method: http.MethodDelete, path: p, body: wire.LeaseRefBody{Holder: holder, Token: token, Secret: a.secret}})
	if err != nil {
		return nil, err
	}
	return resp.meta, nil
}

// Get reads the lease of key, held or free. It fails with ErrNotFound when
// the key was never seen. With q.WaitIndex it blocks until the key changes
// past that index.
func (a *LeasesAPI) Get(ctx context.Context, key string, q *QueryOptions) (*LeaseInfo, *Meta, error) {
	p, err := leasePath("/v1/leases/", key)
	if err != nil {
		return nil, nil, err
	}
	params := map[string]string{}
	wait := q.apply(params)
	return call[LeaseInfo](ctx, a.c, &request{method: http.MethodGet, path: p, query: params, wait: wait}, "lease")
}

// Revoke ends the lease of key whoever holds it (an operator action), the
// safe way: RevokeKey without Force. It fails with ErrNotFound when the
// key was never seen. Revoke names no token, so a retry after an unknown
// outcome could end a lease granted after the first attempt: it is retried
// only when the server surely did not act (connection refused, 429, 503
// no_leader).
func (a *LeasesAPI) Revoke(ctx context.Context, key string) (*Meta, error) {
	_, meta, err := a.RevokeKey(ctx, key)
	return meta, err
}

// leasePath appends key to prefix. The slashes of a key stay slashes (they
// only group names); anything else outside the key alphabet is escaped so
// that the server sees it and refuses it with invalid_key.
func leasePath(prefix, key string) (string, error) {
	if key == "" {
		return "", fmt.Errorf("%w: key is empty", ErrInvalid)
	}
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return prefix + strings.Join(segs, "/"), nil
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
