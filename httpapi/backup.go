package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

// saveSnapshot answers GET /v1/snapshot: a backup of the whole state, as
// of a linearizable read on the leader (cluster.Node.Backup).
func (s *Server) saveSnapshot(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	b, err := s.node.Operator.Backup(ctx)
	if err != nil {
		return err
	}
	info, err := fsm.InspectSnapshot(b)
	if err != nil {
		return fmt.Errorf("the backup just made does not read back: %w", err)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Header().Set(wire.HeaderIndex, strconv.FormatUint(info.Index, 10))
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(b)
	if err != nil {
		s.log.Debug("sending a backup failed", "error", err)
	}
	return nil
}

// restoreSnapshot answers PUT /v1/snapshot[?token-floor=N][&unverified=true]:
// the body, a backup, replaces the cluster's state
// (cluster.Node.RestoreSnapshot). The route needs operator; the backup's
// ACL state is restored only for a caller with acl too (otherwise the
// running one stays), and only such a caller may ask for an unverified
// restore: one of a backup this cluster did not sign.
func (s *Server) restoreSnapshot(w http.ResponseWriter, r *http.Request) error {
	var opts cluster.RestoreOptions
	q := r.URL.Query()
	if v := q.Get("token-floor"); v != "" {
		f, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return badRequest(wire.CodeInvalidQuery, "token-floor", fmt.Sprintf("token-floor: %q is not a whole number from 0 to %d", v, uint64(1<<64-1)))
		}
		opts.TokenFloor = f
	}
	if q.Has("unverified") {
		v, err := strconv.ParseBool(q.Get("unverified"))
		if err != nil {
			return badRequest(wire.CodeInvalidQuery, "unverified", fmt.Sprintf("unverified: %q is not true or false", q.Get("unverified")))
		}
		opts.Unverified = v
	}
	aclErr := authz(r).AllowCluster(fsm.RightACL)
	opts.ACL = aclErr == nil
	if opts.Unverified && aclErr != nil {
		// An unverified backup may hold anything: only a caller who could
		// make any token anyway may restore one.
		return fmt.Errorf("unverified=true: %w", aclErr)
	}
	b, err := readAll(r)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return badRequest(wire.CodeBodyTooLarge, "body", fmt.Sprintf("body: a snapshot of more than %d bytes", wire.MaxSnapshotBytes))
	case err != nil:
		return badRequest(wire.CodeInvalidBody, "body", fmt.Sprintf("body: %v", err))
	case len(b) == 0:
		return badRequest(wire.CodeInvalidBody, "body", "body: empty; send the bytes of a backup (tenure snapshot save)")
	}
	// Not the write timeout: the restore waits until a quorum has
	// installed the snapshot, which takes as long as sending it.
	ctx, cancel := context.WithTimeout(r.Context(), cluster.RestoreTimeout)
	defer cancel()
	res, err := s.node.Operator.RestoreSnapshot(ctx, b, opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.RestoreResult{Snapshot: res.Snapshot, Restored: res.Restored,
		Verified: res.Verified, ACLRestored: opts.ACL, Replicated: res.Replicated})
	return nil
}

// bodyLimit is the largest request body of r's route.
func bodyLimit(r *http.Request) int64 {
	switch {
	case r.Method == http.MethodPut && r.URL.Path == "/v1/snapshot":
		return wire.MaxSnapshotBytes
	case r.Method == http.MethodPost && r.URL.Path == "/v1/renew":
		return MaxRenewBodyBytes
	}
	return MaxBodyBytes
}

// receivingSnapshot serves h, which reads a snapshot of up to
// wire.MaxSnapshotBytes (and a follower buffers it to forward it), only
// for a caller with the right n, checked here before the body is read,
// and only one at a time on this server: an anonymous caller cannot make
// a server hold hundreds of megabytes.
func (s *Server) receivingSnapshot(n need, h http.Handler) http.Handler {
	return s.guard(n, func(w http.ResponseWriter, r *http.Request) error {
		select {
		case s.snapshotSlot <- struct{}{}:
			defer func() { <-s.snapshotSlot }()
		default:
			return fmt.Errorf("%w: this server is receiving another snapshot", cluster.ErrOverloaded)
		}
		h.ServeHTTP(w, r)
		return nil
	})
}
