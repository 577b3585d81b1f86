package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

// need is what a route requires of the request's ACL token. Routes are
// checked on the node that serves them: the leader for writes, renewals
// and linearizable reads (a follower forwards the token with the request),
// the answering node for stale reads and local answers. Each node checks
// against its own replicated ACL state.
type need struct {
	// open routes resolve no token at all (health, readiness, bootstrap).
	open bool
	// right is checked on kind/name; zero checks only that there is a
	// token (or that anonymous requests are allowed), and leaves finer
	// checks to the handler.
	right fsm.Right
	kind  string
	name  func(r *http.Request) string
	// readOnly marks a POST that changes nothing (authorize): like a GET,
	// it is logged only when refused.
	readOnly bool
}

var open = need{open: true}

// anyToken: any valid token, no particular right; the handler may check
// more (bulk renewal, worker registration).
var anyToken = need{}

// anyTokenAsks is anyToken for a POST that only asks (authorize).
var anyTokenAsks = need{readOnly: true}

func onKey(right fsm.Right) need   { return need{right: right, kind: "key", name: pathKey} }
func onGroup(right fsm.Right) need { return need{right: right, kind: "group", name: groupName} }

// onPrefix is for lists: read on the prefix asked for, "" (every name)
// when none is given.
func onPrefix(right fsm.Right) need {
	return need{right: right, kind: "prefix", name: func(r *http.Request) string { return r.URL.Query().Get("prefix") }}
}

// onWorker is for drain: right on the path's worker id.
func onWorker(right fsm.Right) need {
	return need{right: right, kind: "worker", name: func(r *http.Request) string { return pathVar(r, "id") }}
}

func onCluster(right fsm.Right) need { return fixed(right, "cluster", "") }

func fixed(right fsm.Right, kind, name string) need {
	return need{right: right, kind: kind, name: func(*http.Request) string { return name }}
}

// allows is the decision of guard: nil if the request's Authorizer a lets
// a route that needs n through, n's right checked on name (n.name of the
// request), and the *cluster.PermissionError that refuses it otherwise.
// POST /v1/acl/authorize answers with it too, so that what it says a token
// may do is what the routes let it do.
func (n need) allows(a *cluster.Authorizer, name string) error {
	switch {
	case !a.Enabled():
		return nil // ACLs off: everything is allowed
	case n.right != 0:
		return a.Allow(n.right, n.kind, name)
	}
	return a.AllowAny()
}

type authzKey struct{}

// authz is the Authorizer that guard put in the request's context; every
// guarded handler has one.
func authz(r *http.Request) *cluster.Authorizer {
	if a, ok := r.Context().Value(authzKey{}).(*cluster.Authorizer); ok {
		return a
	}
	return cluster.AllowAll()
}

// secretOf is the token the request carries: X-Tenure-Token, or
// Authorization: Bearer. No route reads one from the query (URLs end up
// in logs); the inspection page sends the header.
func secretOf(r *http.Request) string {
	if v := r.Header.Get(wire.HeaderToken); v != "" {
		return v
	}
	if v := r.Header.Get("Authorization"); len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return strings.TrimSpace(v[7:])
	}
	return ""
}

// statusRecorder remembers the status a handler answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets blocking answers through a recorder be flushed.
func (w *statusRecorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// guard checks n against the request's token and then runs h with the
// token's Authorizer in the context. With ACLs on, a request that changes
// state is logged with the accessor id of its token (renewals at debug
// level: they would flood the log).
func (s *Server) guard(n need, h handlerFunc) handlerFunc {
	if n.open {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		a, err := s.node.Replica.ResolveToken(secretOf(r))
		if err != nil {
			s.logRequest(r, "", 0, err)
			return err
		}
		if !a.Enabled() {
			return h(w, r) // ACLs off: authz(r) allows everything
		}
		name := ""
		if n.name != nil {
			name = n.name(r)
		}
		if err := n.allows(a, name); err != nil {
			s.logRequest(r, a.AccessorID(), 0, err)
			return err
		}
		// The actor goes with the writes the request makes: operator
		// commands are proposed on its behalf, and their events name it.
		r = r.WithContext(cluster.WithActor(context.WithValue(r.Context(), authzKey{}, a), a.Actor()))
		if r.Method == http.MethodGet || n.readOnly {
			return h(w, r)
		}
		rec := &statusRecorder{ResponseWriter: w}
		err = h(rec, r)
		s.logRequest(r, a.AccessorID(), rec.status, err)
		return withoutLease(a, err)
	}
}

// withoutLease is err as answered to a token a: a held or not_holder
// refusal carries the key's current lease, and names its holder and token,
// only to a token with read on the key (as GET would). Otherwise the code
// (and field) stay, so that clients still match ErrHeld and ErrNotHolder,
// but the lease is left out and the message names neither.
func withoutLease(a *cluster.Authorizer, err error) error {
	var (
		held *cluster.HeldError
		nh   *cluster.NotHolderError
	)
	can := readable(a)
	switch {
	case err == nil || can == nil:
		return err
	case errors.As(err, &held) && held.Lease != nil && !can(held.Lease.Key):
		if held.WrongSecret {
			return &apiError{code: wire.CodeHeld, field: "secret", msg: fmt.Sprintf(
				"key %q is held under another secret: the request's secret is not the lease's (the lease is shown only to a token with read on the key)", held.Lease.Key)}
		}
		return &apiError{code: wire.CodeHeld, msg: fmt.Sprintf(
			"key %q is held by another holder (the lease is shown only to a token with read on the key)", held.Lease.Key)}
	case errors.As(err, &nh) && nh.Lease != nil && !can(nh.Lease.Key):
		return &apiError{code: wire.CodeNotHolder, msg: fmt.Sprintf(
			"key %q: the release names a holder and token that are not its lease (the lease is shown only to a token with read on the key)", nh.Lease.Key)}
	}
	return err
}

// logRequest logs a refused request, or one that changes state, with the
// accessor id of its token ("" for none). Refusals are counted in
// tenure_acl_refusals_total (those of the ACL check) and their lines are
// limited per code (aclRefusalLog): a flood of them writes a bounded log.
// Secrets are never logged.
func (s *Server) logRequest(r *http.Request, accessor string, status int, err error) {
	if r.Method == http.MethodGet && err == nil {
		return
	}
	level := hclog.Info
	if strings.HasPrefix(r.URL.Path, "/v1/renew") && err == nil {
		level = hclog.Debug
	}
	if err != nil {
		body, _, _ := errorBody(err)
		if body.Error == wire.CodeACLNotFound || body.Error == wire.CodePermissionDenied {
			s.refused.WithLabelValues(body.Error).Inc()
		}
		if !s.refusals.Allow(body.Error) {
			return
		}
	}
	args := []any{"method", r.Method, "path", r.URL.EscapedPath(), "accessor", accessor}
	if status != 0 {
		args = append(args, "status", status)
	}
	if err != nil {
		args = append(args, "error", err)
	}
	s.log.Log(level, "acl_request", args...)
}

// local runs a guarded handler that answers on this node.
func (s *Server) local(n need, h handlerFunc) http.Handler { return s.guard(n, h) }

// readable is the key filter of the answers that name the keys of a
// group (its keys, its plan): nil (every key) while ACLs are off, the keys
// the request may read otherwise. A key left out is counted, never named.
func readable(a *cluster.Authorizer) func(key string) bool {
	if !a.Enabled() {
		return nil
	}
	return func(key string) bool { return a.Rights(key)&fsm.RightRead != 0 }
}

// Defaults of the refusal log's limit (Config.RefusalLogLines and
// RefusalLogInterval): at most 10 lines per reason every 10 seconds, so a
// flood of refused requests (unknown tokens, missing rights) writes at most
// 11 lines per reason per 10 seconds, whatever its rate.
const (
	DefaultRefusalLogLines    = cluster.DefaultLogLines
	DefaultRefusalLogInterval = cluster.DefaultLogInterval
)

// aclRefusalLog limits the acl_request lines of log: per reason (the
// error code of the answer), the first lines of each interval are logged,
// the rest only counted, and once the interval ends an
// acl_requests_suppressed line says how many were left out. Lines of
// requests that succeed are not limited.
func aclRefusalLog(log hclog.Logger, lines int, interval time.Duration) *cluster.LogLimiter {
	return cluster.NewLogLimiter(lines, interval, func(reason string, n int) {
		log.Info("acl_requests_suppressed", "reason", reason, "suppressed", n, "interval", interval.String())
	})
}

// refusalCodes are the codes of the requests that the ACL check refuses:
// an unknown secret, or a token (or none) without the right.
var refusalCodes = []string{wire.CodeACLNotFound, wire.CodePermissionDenied}

// newRefusalCounter is tenure_acl_refusals_total, with every code at zero
// so that the series exist from the start.
func newRefusalCounter() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tenure_acl_refusals_total",
		Help: "Requests this server refused for their ACL token, by code: acl_not_found (a secret no token has), permission_denied (no token, or one without the right or outside its holder binding).",
	}, []string{"code"})
	for _, code := range refusalCodes {
		c.WithLabelValues(code)
	}
	return c
}
