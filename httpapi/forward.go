package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
)

// forwardedHeaders are copied from the leader's answer.
var forwardedHeaders = []string{"Content-Type", "Retry-After", wire.HeaderIndex, wire.HeaderLastContact, wire.HeaderKnownLeader, wire.HeaderRelease,
	wire.HeaderAppliedIndex, wire.HeaderBehind, wire.HeaderNotReady}

// forward relays a request to the leader and its answer back. A request
// that was already forwarded once is not forwarded again: the node answers
// no_leader and the client retries, so a request crosses at most one hop
// even while nodes disagree about who leads.
func (s *Server) forward(w http.ResponseWriter, r *http.Request) {
	if by := r.Header.Get(headerForwardedBy); by != "" {
		writeError(w, fmt.Errorf("request forwarded by %s, but this node does not lead: %w", by, cluster.ErrNotLeader))
		return
	}
	lookup, cancelLookup := context.WithTimeout(r.Context(), leaderAddrWait)
	leaderID, addr := s.node.Replica.LeaderHTTP(lookup)
	cancelLookup()
	if addr == "" || s.node.Replica.IsLeader() {
		// No known leader, or this node leads but is not established yet.
		writeError(w, fmt.Errorf("%s: %w", s.noLeaderReason(), cluster.ErrNotLeader))
		return
	}
	body, err := readAll(r)
	if err != nil {
		writeError(w, badRequest(wire.CodeBodyTooLarge, "body", fmt.Sprintf("body exceeds %d bytes", bodyLimit(r))))
		return
	}
	target := s.cfg.ForwardScheme + "://" + addr + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	// A leader that is cut off may never answer (a blocking acquire would
	// hang for its whole wait): give up as soon as this node sees that
	// another node leads, or none.
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	stopWatch := s.watchLeader(ctx, addr, cancel)
	req, err := http.NewRequestWithContext(ForServer(ctx, leaderID), r.Method, target, bytes.NewReader(body))
	if err != nil {
		writeError(w, fmt.Errorf("build forwarded request: %w", err))
		return
	}
	copyHeaders(req.Header, r.Header, "Content-Type", wire.HeaderToken, "Authorization") // the leader checks the token itself
	req.Header.Set(headerForwardedBy, s.node.Replica.ID())
	resp, err := s.cfg.ForwardClient.Do(req)
	stopWatch()
	if err == nil && errors.Is(context.Cause(ctx), errLeaderMoved) {
		resp.Body.Close()
		err = context.Cause(ctx)
	}
	if err != nil {
		if r.Context().Err() != nil {
			return // the client went away
		}
		// A *url.Error names the whole URL, query included (a release may
		// carry its lease secret there): say the path only.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		path := r.URL.EscapedPath()
		s.log.Debug("forward failed", "leader", addr, "method", r.Method, "path", path, "error", err)
		// The leader may have received the request: the outcome is unknown.
		writeError(w, fmt.Errorf("forward %s %s to leader %s: %w: %v", r.Method, path, addr, cluster.ErrLeadershipLost, err))
		return
	}
	defer resp.Body.Close()
	copyHeaders(w.Header(), resp.Header, forwardedHeaders...)
	w.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(w, resp.Body); err != nil && r.Context().Err() == nil {
		s.log.Debug("relaying forwarded answer failed", "error", err)
	}
}

// copyHeaders sets in dst the headers names that src has.
func copyHeaders(dst, src http.Header, names ...string) {
	for _, h := range names {
		if v := src.Get(h); v != "" {
			dst.Set(h, v)
		}
	}
}

// leaderAddrWait bounds how long a request waits for a new leader to give
// its HTTP address before it is answered no_leader.
const leaderAddrWait = 2 * time.Second

// errLeaderMoved ends a forwarded request whose leader this node no longer
// follows.
var errLeaderMoved = errors.New("the leader changed while the request was forwarded")

// leaderCheckInterval is how often a forwarded request checks that its
// leader is still the one this node follows.
var leaderCheckInterval = 200 * time.Millisecond

// watchLeader cancels a forwarded request with errLeaderMoved once this
// node's known leader is no longer addr. The returned stop ends the watch;
// after it returns, the request is no longer cancelled by it.
// Most forwards are answered well within leaderCheckInterval: the watch
// starts only when the first interval has passed, so they cost a timer,
// not a goroutine.
func (s *Server) watchLeader(ctx context.Context, addr string, cancel context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	timer := time.AfterFunc(leaderCheckInterval, func() {
		defer close(exited)
		check := func() bool {
			if now := s.node.Replica.LeaderHTTPAddr(); now != addr {
				s.log.Debug("leader changed during a forwarded request", "was", addr, "now", now)
				cancel(errLeaderMoved)
				return false
			}
			return true
		}
		if !check() {
			return
		}
		t := time.NewTicker(leaderCheckInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if !check() {
					return
				}
			}
		}
	})
	return func() {
		close(done)
		if timer.Stop() {
			return // it never started
		}
		<-exited
	}
}

// noLeaderReason says, for an operator, why this node has no leader to
// send a request to: its role and term, and how long since it last heard
// from a leader.
func (s *Server) noLeaderReason() string {
	st := s.node.Replica.Status()
	if st.Role == "leader" {
		return fmt.Sprintf("%s leads in term %d but has not established itself yet (or is handing leadership over)", st.NodeID, st.Term)
	}
	since := "has never heard from a leader"
	if st.LastContact > 0 {
		since = fmt.Sprintf("last heard from a leader %v ago", st.LastContact.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s has no leader (%s in term %d, %s): it cannot reach a quorum of voters, or an election is under way", st.NodeID, st.Role, st.Term, since)
}
