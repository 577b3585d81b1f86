package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

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
