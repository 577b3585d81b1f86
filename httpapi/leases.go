package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

func (s *Server) acquire(w http.ResponseWriter, r *http.Request) error {
	var body wire.AcquireBody
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	if body.TTL == "" {
		return badRequest(wire.CodeInvalidTTL, "ttl", "ttl: required, a duration like \"10s\"")
	}
	ttl, err := parseDuration("ttl", body.TTL, 0)
	if err != nil {
		return err
	}
	wait, err := parseDuration("wait", body.Wait, 0)
	if err != nil {
		return err
	}
	if err := authz(r).AllowHolder(body.Holder); err != nil {
		return err
	}
	if wait > 0 {
		// A blocking acquire may wait minutes for the key: it does so
		// without holding an admission slot (and a blocking acquire of
		// a free key costs no more than it did while it held one).
		leaveAdmission(r)
	}
	// A caller that chose no secret gets one: the answer is the only
	// place it is ever shown.
	secret := body.Secret
	if secret == "" {
		secret = wire.NewLeaseSecret()
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.WriteTimeout+wait)
	defer cancel()
	lease, created, err := s.node.Leases.Acquire(ctx, cluster.AcquireRequest{
		Key: pathKey(r), Holder: body.Holder, TTL: ttl, Wait: wait, Metadata: body.Metadata, Secret: secret,
	})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	out := leaseOut(lease)
	out.Secret = secret
	writeJSON(w, status, out)
	return nil
}

func (s *Server) release(w http.ResponseWriter, r *http.Request) error {
	var body wire.LeaseRefBody
	q := r.URL.Query()
	if q.Has("holder") || q.Has("token") || q.Has("secret") {
		body.Holder, body.Secret = q.Get("holder"), q.Get("secret")
		if q.Has("token") {
			t, err := strconv.ParseUint(q.Get("token"), 10, 64)
			if err != nil {
				return badRequest(wire.CodeInvalidToken, "token", fmt.Sprintf("token: %q is not an unsigned integer", q.Get("token")))
			}
			body.Token = t
		}
	} else if b, err := decodeLeaseRef(r); err != nil {
		return err
	} else {
		body = b
	}
	if body.Load != nil {
		return badRequest(wire.CodeInvalidBody, "load", "load: reported with renewals only, not with a release")
	}
	if err := authz(r).AllowHolder(body.Holder); err != nil {
		return err
	}
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	freed, err := s.node.Leases.Release(ctx, pathKey(r), body.Holder, body.Secret, body.Token)
	if err != nil {
		return err
	}
	outcome := "gone"
	if freed {
		outcome = "freed"
	}
	w.Header().Set(wire.HeaderRelease, outcome)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// revoke ends the lease of the path's key: safely (the key frees when the
// holder's deadline passes), or at once with ?force=true.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) error {
	force, err := parseForce(r)
	if err != nil {
		return err
	}
	return s.write(w, r, func(ctx context.Context) (any, error) {
		ended, err := s.node.Leases.Revoke(ctx, pathKey(r), force)
		return wire.RevokeResult{Revoked: revokedOut(ended, readable(authz(r)))}, err
	})
}

// revokeHolder ends every lease of ?holder=H. The route needs the revoke
// right on every key: the holder's keys are only known once the command
// applies, and a partial revoke would leave the holder running.
func (s *Server) revokeHolder(w http.ResponseWriter, r *http.Request) error {
	force, err := parseForce(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if !q.Has("holder") {
		return badRequest(wire.CodeInvalidHolder, "holder", "holder: required, the holder whose leases to revoke")
	}
	return s.write(w, r, func(ctx context.Context) (any, error) {
		ended, err := s.node.Leases.RevokeHolder(ctx, q.Get("holder"), force)
		return wire.RevokeResult{Revoked: revokedOut(ended, readable(authz(r)))}, err
	})
}

// parseForce reads the force query parameter: absent, "true" or "false".
func parseForce(r *http.Request) (bool, error) {
	v, ok := r.URL.Query()["force"]
	if !ok {
		return false, nil
	}
	switch {
	case len(v) == 1 && (v[0] == "true" || v[0] == "1" || v[0] == ""):
		return true, nil
	case len(v) == 1 && (v[0] == "false" || v[0] == "0"):
		return false, nil
	}
	return false, badRequest(wire.CodeInvalidQuery, "force", fmt.Sprintf("force: %q is not true or false", strings.Join(v, ",")))
}

// revokedOut answers the leases a revoke or a control ended. can is the
// request's key filter (readable): a lease of a key it may not read is
// answered without its holder and token.
func revokedOut(ended []cluster.EndedLease, can func(key string) bool) []wire.RevokedLease {
	out := slices.Clone(ended)
	for i, e := range out {
		if can != nil && !can(e.Key) {
			out[i].Holder, out[i].Token = "", 0
		}
	}
	return out
}

func (s *Server) renewOne(w http.ResponseWriter, r *http.Request) error {
	body, err := decodeLeaseRef(r)
	if err != nil {
		return err
	}
	if err := authz(r).AllowHolder(body.Holder); err != nil {
		return err
	}
	if err := checkLoad("load", body.Load); err != nil {
		return err
	}
	return s.write(w, r, func(ctx context.Context) (any, error) {
		lease, err := s.node.Leases.Renew(ctx, pathKey(r), body.Holder, body.Secret, body.Token)
		if err != nil {
			return nil, err
		}
		if body.Load != nil {
			s.node.Placement.ReportLoads(body.Holder, []cluster.KeyLoad{{Key: pathKey(r), Load: *body.Load}}, nil)
		}
		return leaseOut(lease), nil
	})
}

func (s *Server) renewMany(w http.ResponseWriter, r *http.Request) error {
	raw, err := readBody(r)
	if err != nil {
		return err
	}
	// The body as the client sends it is read without reflection; any
	// other shape (and every error) goes through the strict decoder.
	body, ok := parseRenewMany(raw)
	if !ok {
		body = wire.RenewManyBody{} // nothing of a partial parse
		if err := decodeRaw(raw, &body); err != nil {
			return err
		}
	}
	// One holder per batch, and write on every key of it: a key the
	// token may not write refuses the whole call.
	a := authz(r)
	if err := a.AllowHolder(body.Holder); err != nil {
		return err
	}
	if err := checkLoad("load", body.Load); err != nil {
		return err
	}
	loads := 0
	refs := make([]cluster.LeaseRef, len(body.Leases))
	for i, l := range body.Leases {
		if err := a.Allow(fsm.RightWrite, "key", l.Key); err != nil {
			return err
		}
		if l.Load != nil {
			if wire.LoadProblem(*l.Load) != "" {
				return checkLoad(fmt.Sprintf("leases[%d].load", i), l.Load)
			}
			loads++
		}
		refs[i] = cluster.LeaseRef{Key: l.Key, Token: l.Token, Secret: l.Secret}
		if l.Secret == "" {
			refs[i].Secret = body.Secret
		}
	}
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	results, err := s.node.Leases.RenewMany(ctx, body.Holder, refs)
	if err != nil {
		return err
	}
	if loads > 0 || body.Load != nil {
		s.reportLoads(body, results, loads)
	}
	out := wire.RenewManyResults{Results: make([]wire.RenewResultBody, len(results))}
	for i, res := range results {
		rr := &out.Results[i]
		*rr = wire.RenewResultBody{Key: refs[i].Key, Token: refs[i].Token, OK: res.Err == nil}
		switch {
		case res.Err == nil:
			if !body.Brief {
				rr.Lease = leaseOut(res.Lease)
			}
		case !renewRefusal(rr, res.Err):
			return res.Err // leadership moved mid-call: the whole call fails
		}
	}
	// Written by hand (wire.RenewManyResults.AppendJSON): a bulk
	// renewal answers up to MaxRenewBatch leases, and reflection was a
	// third of its cost.
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(append(out.AppendJSON(make([]byte, 0, 400*len(out.Results))), '\n'))
	return nil
}

// checkLoad refuses a reported load outside [0, wire.MaxLoad] (JSON has
// no NaN or infinity).
func checkLoad(field string, load *float64) error {
	if load == nil {
		return nil
	}
	if p := wire.LoadProblem(*load); p != "" {
		return &cluster.InvalidError{Field: field, Err: errors.New(p)}
	}
	return nil
}

// reportLoads hands the loads of a bulk renewal (loads of its leases
// carry one) to the placement: those of the leases it renewed, and the
// holder's total when at least one lease was renewed.
func (s *Server) reportLoads(body wire.RenewManyBody, results []cluster.RenewResult, loads int) {
	keys := make([]cluster.KeyLoad, 0, loads)
	renewed := false
	for i, res := range results {
		if res.Err != nil {
			continue
		}
		renewed = true
		if l := body.Leases[i]; l.Load != nil {
			keys = append(keys, cluster.KeyLoad{Key: l.Key, Load: *l.Load})
		}
	}
	if renewed {
		s.node.Placement.ReportLoads(body.Holder, keys, body.Load)
	}
}

// renewRefusal fills rr with err when err refuses one lease of a bulk
// renewal (lease lost, or a wrong secret), and reports whether it did. A
// function of its own, so that its targets are allocated on refusals
// only, not for every lease.
func renewRefusal(rr *wire.RenewResultBody, err error) bool {
	var lost *cluster.LostError
	var wrong *cluster.SecretError
	switch {
	case errors.As(err, &lost):
		rr.Error, rr.Reason = wire.CodeLeaseLost, lost.Reason
	case errors.As(err, &wrong):
		rr.Error, rr.Message = wire.CodeWrongSecret, wrong.Error()
	default:
		return false
	}
	return true
}

func (s *Server) getLease(w http.ResponseWriter, r *http.Request) error {
	key := pathKey(r)
	if err := fsm.ValidateKey(key); err != nil {
		return &cluster.InvalidError{Field: "key", Err: err}
	}
	c := consistency(r)
	return s.blocking(w, r, func(ctx context.Context) (any, uint64, error) {
		lease, err := s.node.Leases.Get(ctx, key, c)
		if errors.Is(err, cluster.ErrNotFound) {
			return nil, watchIndex(s.node.Leases.LeaseIndex()), err
		}
		if err != nil {
			return nil, 0, err
		}
		return leaseOut(lease), lease.ModifyIndex, nil
	})
}

// listLeases answers one page of the leases that match the query (see
// list_page.go), streamed.
func (s *Server) listLeases(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	// A free list also names the keys of groups that were never acquired.
	f := fsm.Filter{Prefix: q.Get("prefix"), State: q.Get("state"), Holder: q.Get("holder"), NeverAcquired: true}
	if f.State != "" && f.State != "held" && f.State != "free" {
		return badRequest(wire.CodeInvalidQuery, "state", fmt.Sprintf("state: %q is not held or free", f.State))
	}
	p, err := parsePage(r)
	if err != nil {
		return err
	}
	c := consistency(r)
	return s.blocking(w, r, func(ctx context.Context) (any, uint64, error) {
		page, err := s.node.Leases.ListPage(ctx, f, p, c)
		if err != nil {
			return nil, 0, err
		}
		index := watchIndex(page.Index)
		return listAnswer{field: "leases", n: len(page.Leases), item: func(i int) any { return leaseOut(page.Leases[i]) },
			index: index, after: page.Next}, index, nil
	})
}

// watchIndex is the index a read reports. Before any lease exists the lease
// index is 0, and index=0 makes a read non-blocking, so a watcher of an empty
// list or of a key not yet created could only poll. Reporting at least 1
// lets it block: every lease change has a higher Raft index.
func watchIndex(index uint64) uint64 { return max(index, 1) }

func consistency(r *http.Request) cluster.Consistency {
	if stale(r) {
		return cluster.Stale
	}
	return cluster.Linearizable
}
