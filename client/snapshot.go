package client

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// snapshotTimeout is the time limit of one attempt of a backup or a
// restore, which move up to MaxSnapshotBytes: longer than the server's
// limit of a restore (5 minutes), so that its answer arrives.
const snapshotTimeout = 10 * time.Minute

// SaveSnapshot reads a backup of the whole state from the leader, as of a
// linearizable read: every write acknowledged before the call is in it.
// The bytes are the snapshot format (with its index, term and CRC-32C)
// that RestoreSnapshot and `tenure snapshot inspect` read. It needs the
// operator right.
func (o *OperatorAPI) SaveSnapshot(ctx context.Context) ([]byte, *Meta, error) {
	resp, err := o.c.do(ctx, &request{method: http.MethodGet, path: "/v1/snapshot", timeout: snapshotTimeout, maxAnswer: MaxSnapshotBytes})
	if err != nil {
		return nil, nil, err
	}
	return resp.body, resp.meta, nil
}

// RestoreSnapshot replaces the state of the whole cluster with a backup
// that SaveSnapshot made, through Raft: every server takes it. Leases held
// at the time of the restore keep their holder; every other lease the
// backup holds restarts with a full TTL; the next token is above every
// token the cluster handed out, before the backup and since. A backup
// restored into another cluster (a new one, after a disaster) cannot know
// the tokens the old cluster handed out after it: pass the old cluster's
// last token, or a bound above it, as tokenFloor (0 for none). It needs
// the operator right, and is not retried once it may have started.
func (o *OperatorAPI) RestoreSnapshot(ctx context.Context, snapshot []byte, tokenFloor uint64) (*RestoreResult, *Meta, error) {
	return o.RestoreSnapshotWith(ctx, snapshot, RestoreOptions{TokenFloor: tokenFloor})
}

// RestoreOptions say how RestoreSnapshotWith treats a backup.
type RestoreOptions struct {
	// TokenFloor: see RestoreSnapshot (0 for none).
	TokenFloor uint64
	// Unverified restores a backup that the cluster did not sign: one of
	// another cluster, an edited one, or one written before signed
	// backups. Without it such a backup is refused (ErrBackupUnverified).
	// It needs the acl right.
	Unverified bool
}

// RestoreSnapshotWith is RestoreSnapshot with options. Without the acl
// right the cluster keeps its own ACL state (RestoreResult.ACLRestored
// is false).
func (o *OperatorAPI) RestoreSnapshotWith(ctx context.Context, snapshot []byte, opts RestoreOptions) (*RestoreResult, *Meta, error) {
	if len(snapshot) == 0 {
		return nil, nil, fmt.Errorf("snapshot: empty")
	}
	if len(snapshot) > MaxSnapshotBytes {
		return nil, nil, fmt.Errorf("snapshot: %d bytes is more than %d", len(snapshot), MaxSnapshotBytes)
	}
	r := &request{method: http.MethodPut, path: "/v1/snapshot", raw: snapshot, timeout: snapshotTimeout, unsafeRetry: true}
	r.query = map[string]string{}
	if opts.TokenFloor > 0 {
		r.query["token-floor"] = strconv.FormatUint(opts.TokenFloor, 10)
	}
	if opts.Unverified {
		r.query["unverified"] = "true"
	}
	return call[RestoreResult](ctx, o.c, r, "restore answer")
}
