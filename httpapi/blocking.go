package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
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
		return 0, badIndex(v)
	}
	return n, nil
}

func badIndex(v string) error {
	return badRequest(wire.CodeInvalidIndex, "index", fmt.Sprintf("index: %q is not an unsigned integer", v))
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
	timeout, err := s.waitEnd(q, min > 0)
	if err != nil {
		return err
	}
	final := false
	for {
		// Take the channels before reading, so no change between the read
		// and the wait is missed.
		changed := s.node.Replica.Changed()
		var other <-chan struct{}
		if also != nil {
			other = also()
		}
		out, index, err := read(r.Context())
		if err != nil && index == 0 {
			return err
		}
		if final || min == 0 || index > min {
			if err != nil {
				s.readHeaders(w, index)
				return err
			}
			return s.writeRead(w, index, out)
		}
		if final, err = await(r.Context(), timeout, 0, changed, other); err != nil {
			return err
		}
	}
}

// waitEnd reads ?wait= (blockingWait) and returns the channel that ends
// the wait of a read that blocks; nil (never) for one that does not.
func (s *Server) waitEnd(q url.Values, block bool) (<-chan time.Time, error) {
	wait, err := s.blockingWait(q)
	if err != nil || !block {
		return nil, err
	}
	return time.After(wait), nil
}

// await waits for what ends one round of a blocking read: wake or also
// closing, recheck passing (0: never), the end of the wait, or the client
// going away (its error). final: the next read is the answer, whatever it
// finds (read again, so that what has no index of its own, such as a
// lease's time left, is that of the end of the wait, not of its start).
func await(ctx context.Context, timeout <-chan time.Time, recheck time.Duration, wake, also <-chan struct{}) (final bool, err error) {
	var tick <-chan time.Time
	if recheck > 0 {
		t := time.NewTimer(recheck)
		defer t.Stop()
		tick = t.C
	}
	select {
	case <-wake:
	case <-tick:
	case <-also:
		return true, nil
	case <-timeout:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return false, nil
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

// unsettledRecheck is how often a waiting status read looks again while
// its node knows no leader or no cluster ID: terms move with every
// election, and nothing announces them.
const unsettledRecheck = time.Second

// safetyRecheck is how often any waiting read looks again on its own, for
// the changes that nothing announces: a term that moves while the same
// leader stays known, a configuration that arrives in a snapshot, an
// uncommitted configuration entry that a follower drops. A look sends
// nothing unless the hash moved. A variable so that tests may shorten it.
var safetyRecheck = 30 * time.Second

// maxHashLen bounds ?hash=: a content hash is 16 hex digits.
const maxHashLen = 64

// hashRead reads a local answer, its content hash, and whether it is
// unsettled (to be read again every unsettledRecheck while waiting).
type hashRead func() (out any, hash string, unsettled bool)

// hashBlocking answers a local read that has no Raft index, as Consul's
// hash-based blocking queries do: the answer carries
// X-Tenure-Content-Hash, and with ?hash=H the server waits until the hash
// differs from H, or until ?wait (default 5m) ends, then answers. Waiting
// costs nothing until changed's channel closes, but for a look every
// safetyRecheck.
func (s *Server) hashBlocking(w http.ResponseWriter, r *http.Request, changed func() <-chan struct{}, read hashRead) error {
	q := r.URL.Query()
	seen := q.Get("hash")
	if len(seen) > maxHashLen || !isHex(seen) {
		return badRequest(wire.CodeInvalidQuery, "hash", fmt.Sprintf("hash: %q is not a content hash (up to %d hex digits, as X-Tenure-Content-Hash gives it)", seen, maxHashLen))
	}
	timeout, err := s.waitEnd(q, seen != "")
	if err != nil {
		return err
	}
	final := false
	for {
		// Take the channel before reading, so no change between the read
		// and the wait is missed.
		wake := changed()
		out, hash, unsettled := read()
		if final || seen == "" || hash != seen {
			w.Header().Set(wire.HeaderContentHash, hash)
			writeJSON(w, http.StatusOK, out)
			return nil
		}
		recheck := safetyRecheck
		if unsettled {
			recheck = min(recheck, unsettledRecheck)
		}
		if final, err = await(r.Context(), timeout, recheck, wake, nil); err != nil {
			return err
		}
	}
}

func isHex(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// contentHash is a 64-bit FNV-1a hash of v's JSON, in 16 hex digits.
func contentHash(v any) string {
	h := fnv.New64a()
	if err := json.NewEncoder(h).Encode(v); err != nil {
		return strings.Repeat("0", 16)
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// statusHash hashes what a status tells of the cluster's shape: the role,
// the leader, the term, readiness, the servers and their health, the
// failure tolerance; not the indexes, the last token or the times, which
// move with every entry and heartbeat.
func statusHash(st cluster.Status) string {
	return contentHash(struct {
		NodeID, ClusterID, Role, LeaderID, LeaderHTTPAddr string
		Term                                              uint64
		Ready                                             bool
		Servers                                           []cluster.Server
		FailureTolerance                                  int
	}{st.NodeID, st.ClusterID, st.Role, st.LeaderID, st.LeaderHTTPAddr, st.Term, st.Ready, st.Servers, st.FailureTolerance})
}
