package client

import (
	"context"
	"fmt"
	"maps"
)

// SetMetadata replaces the metadata of the lease on the cluster: it
// acquires the key again under the lease's holder and TTL with md, which
// the cluster answers with the same lease and token, md stored and the
// change logged. Readers of the key see md from then on; Metadata returns
// it. md must have at least one entry (metadata can be replaced, not
// cleared) and is copied.
//
// Like a renewal, the acquisition restarts the lease's deadline on the
// leader, and the local deadline moves to its SentAt + TTL − margin. A
// lease that has ended returns its Err. If the cluster had ended the lease
// already (it answers with a new grant), the new grant is released and
// SetMetadata fails with an error matching ErrLeaseLost; the renewer
// notices the loss at its next renewal.
func (l *Lease) SetMetadata(ctx context.Context, md map[string]string) error {
	if len(md) == 0 {
		return fmt.Errorf("%w: metadata must have at least one entry", ErrInvalid)
	}
	md = maps.Clone(md)
	if err := l.Err(); err != nil {
		return err
	}
	k := l.k
	info, meta, err := k.c.Leases().Acquire(ctx, l.key, AcquireRequest{Holder: l.holder, TTL: l.ttl, Metadata: md})
	if err != nil {
		return fmt.Errorf("set metadata of %q (token %d): %w", l.key, l.token, err)
	}
	if meta.Created || info.Token != l.token {
		k.mu.Lock()
		superseded := k.supersededLocked(l)
		k.mu.Unlock()
		if !superseded {
			k.c.releaseQuietly(ctx, l.key, l.holder, info.Token)
		}
		return fmt.Errorf("%w: lease %q (token %d) had ended on the cluster before its metadata changed (the cluster granted token %d)",
			ErrLeaseLost, l.key, l.token, info.Token)
	}
	k.mu.Lock()
	if l.state == leaseHeld {
		l.metadata = md
		if d := meta.SentAt.Add(l.ttl - l.margin); d.After(l.deadline) {
			l.deadline = d
		}
	}
	k.mu.Unlock()
	l.log.Info("lease_metadata_changed", "key", l.key, "holder", l.holder, "token", l.token)
	return nil
}

// kept returns the lease this Client keeps alive for id, or nil.
func (k *keeper) kept(id leaseID) *Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.leases[id]
}
