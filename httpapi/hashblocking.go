package httpapi

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strings"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
)

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
	wait, err := s.blockingWait(q)
	if err != nil {
		return err
	}
	var timeout <-chan time.Time
	if seen != "" {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		// Take the channel before reading, so no change between the read
		// and the wait is missed.
		wake := changed()
		out, hash, unsettled := read()
		if seen == "" || hash != seen {
			return s.writeHashed(w, out, hash)
		}
		recheck := safetyRecheck
		if unsettled {
			recheck = min(recheck, unsettledRecheck)
		}
		t := time.NewTimer(recheck)
		select {
		case <-wake:
		case <-t.C:
		case <-timeout:
			// The answer is read now: its indexes and times are those
			// of the end of the wait, not of its start.
			t.Stop()
			out, hash, _ = read()
			return s.writeHashed(w, out, hash)
		case <-r.Context().Done():
			t.Stop()
			return r.Context().Err()
		}
		t.Stop()
	}
}

func (s *Server) writeHashed(w http.ResponseWriter, out any, hash string) error {
	w.Header().Set(wire.HeaderContentHash, hash)
	writeJSON(w, http.StatusOK, out)
	return nil
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
