package cluster

import (
	"context"

	"github.com/tenure-io/tenure/cluster/internal/check"
	"github.com/tenure-io/tenure/fsm"
)

// Release frees key if holder holds it under token and secret, and
// reports whether this call freed it. It is idempotent for the caller's
// lease: when that lease is gone already (released, expired, revoked,
// superseded by a newer token, or the key's record forgotten) it returns
// false and no error. A holder and token that never were the key's lease
// (the current token under another holder, or a token the key never had)
// fail with a *NotHolderError carrying the current lease; the held lease
// named without its secret with a *SecretError.
func (n *Node) Release(ctx context.Context, key, holder, secret string, token uint64) (bool, error) {
	if err := fsm.ValidateKey(key); err != nil {
		return false, &InvalidError{Field: "key", Err: err}
	}
	if err := check.Holder(holder); err != nil {
		return false, err
	}
	if err := check.Token(token); err != nil {
		return false, err
	}
	if err := check.Secret(secret); err != nil {
		return false, err
	}
	r, err := n.write(ctx, fsm.Release{Key: key, Holder: holder, Token: token, SecretHash: fsm.HashSecret(secret)})
	if err != nil {
		return false, err
	}
	switch r.Code {
	case fsm.NotHolder:
		return false, &NotHolderError{Lease: r.Lease}
	case fsm.WrongSecret:
		return false, &SecretError{Key: key}
	}
	return r.Code == fsm.Freed, nil
}
