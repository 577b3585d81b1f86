package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// defaultBlockingWait is the wait of a blocking query that names an index
// but no wait.
const defaultBlockingWait = 5 * time.Minute

// blockingWait reads ?wait= of a blocking query: 5m when absent, capped at
// the server's MaxBlockingWait.
func (s *Server) blockingWait(q url.Values) (time.Duration, error) {
	wait, err := parseDuration("wait", q.Get("wait"), defaultBlockingWait)
	return min(wait, s.cfg.MaxBlockingWait), err
}

// parseIndex reads ?index= of a blocking query; "" is 0.
func parseIndex(v string) (uint64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, badRequest(wire.CodeInvalidIndex, "index", fmt.Sprintf("index: %q is not an unsigned integer", v))
	}
	return n, nil
}

// readFunc reads the state behind a query: the answer, the index to report,
// and an error (an error with a non-zero index is answered with that index,
// e.g. 404 for a key not created yet).
type readFunc func(ctx context.Context) (any, uint64, error)

// blocking answers a read, Consul-style: with ?index=N it waits until the
// read's index moves past N or the wait ends. Every answer carries the index
// and, for stale reads, how stale this node may be.
func (s *Server) blocking(w http.ResponseWriter, r *http.Request, read readFunc) error {
	return s.blockingOr(w, r, nil, read)
}

// blockingOr is blocking that also answers, at the same index, when the
// channel that also gives closes: a change that no index counts (a
// worker's gossip status).
func (s *Server) blockingOr(w http.ResponseWriter, r *http.Request, also func() <-chan struct{}, read readFunc) error {
	q := r.URL.Query()
	min, err := parseIndex(q.Get("index"))
	if err != nil {
		return err
	}
	wait, err := s.blockingWait(q)
	if err != nil {
		return err
	}
	ctx := r.Context()
	var timeout <-chan time.Time
	if min > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		// Take the channel before reading, so no change between the read
		// and the wait is missed.
		changed := s.node.Replica.Changed()
		var other <-chan struct{}
		if also != nil {
			other = also()
		}
		out, index, err := read(ctx)
		if err != nil && index == 0 {
			return err
		}
		if min > 0 && index <= min {
			select {
			case <-changed:
				continue
			case <-other:
				if out, index, err = read(ctx); err != nil && index == 0 {
					return err
				}
			case <-timeout:
				// Read again: what has no index of its own (a lease's
				// time left, renewed meanwhile) is that of the end of
				// the wait, not of its start.
				if out, index, err = read(ctx); err != nil && index == 0 {
					return err
				}
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err != nil {
			s.readHeaders(w, index)
			return err
		}
		return s.writeRead(w, index, out)
	}
}

// writeRead answers 200 with out, a read at index, and the read headers;
// a streamer streams itself.
func (s *Server) writeRead(w http.ResponseWriter, index uint64, out any) error {
	s.readHeaders(w, index)
	if st, ok := out.(streamer); ok {
		writeStream(w, st)
		return nil
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// readHeaders says how fresh the answer is: the index, and how stale this
// node may be. X-Tenure-Last-Contact is the longer of the time since the
// leader was last heard and the time the applied index has trailed the
// leader's commit index, so a node that hears heartbeats but applies
// nothing (a full disk) does not claim to be fresh.
func (s *Server) readHeaders(w http.ResponseWriter, index uint64) {
	h := w.Header()
	h.Set(wire.HeaderIndex, strconv.FormatUint(index, 10))
	health := s.node.Replica.Health()
	st := s.node.Replica.LastContact()
	if st >= 0 && health.BehindFor > st {
		st = health.BehindFor
	}
	ms := st.Milliseconds()
	if st < 0 {
		ms = -1
	}
	h.Set(wire.HeaderLastContact, strconv.FormatInt(ms, 10))
	h.Set(wire.HeaderKnownLeader, strconv.FormatBool(s.node.Replica.LeaderHTTPAddr() != "" || s.node.Replica.Ready() == nil))
	h.Set(wire.HeaderAppliedIndex, strconv.FormatUint(health.AppliedIndex, 10))
	h.Set(wire.HeaderBehind, strconv.FormatUint(health.BehindEntries, 10))
	if health.Problem != "" {
		h.Set(wire.HeaderNotReady, health.Problem)
	}
}
