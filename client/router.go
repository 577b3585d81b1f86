package client

import (
	"net/url"
	"slices"
	"strings"
	"sync"
)

// router chooses the server address for each attempt.
//
// Policy: the client sends to the address that answered last. When an answer
// names the leader in X-Tenure-Leader-Addr, the client follows it if it may
// trust it (see leaderTrust below). An address that the client cannot reach (a connection error) is not
// followed again until another leader address has been followed, so an
// address that is only reachable inside the cluster's network costs one
// failed attempt per leader change, not one per request. After a retryable
// failure the client moves to the next configured address, or to the
// leader named by the failed answer if that is another address it trusts.
//
// All methods are safe for concurrent use.
type router struct {
	mu      sync.Mutex
	seeds   []string        // normalized configured addresses
	cur     string          // address for the next attempt
	next    int             // index in seeds to rotate to from a non-seed address
	avoid   string          // address that failed to connect; not followed as leader
	proven  map[string]bool // addresses that have answered a call
	trusted func(leader string) bool
}

func newRouter(seeds []string, trusted func(leader string) bool) *router {
	return &router{seeds: seeds, cur: seeds[0], next: 1 % len(seeds), trusted: trusted, proven: map[string]bool{}}
}

// follow returns the normalized leader address named by leaderHdr in an
// answer from addr, when the client should send there next; "" otherwise.
func (r *router) follow(addr, leaderHdr string) string {
	leader := leaderAddress(addr, leaderHdr)
	if leader == "" || leader == addr || leader == r.avoid {
		return ""
	}
	if !slices.Contains(r.seeds, leader) && (r.trusted == nil || !r.trusted(leader)) {
		return ""
	}
	return leader
}

// hasAnswered reports whether addr has answered a call of this client.
func (r *router) hasAnswered(addr string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proven[addr]
}

// pick returns the address for the next attempt.
func (r *router) pick() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

// answered records a successful answer from addr whose X-Tenure-Leader-Addr
// header was leaderHdr (possibly empty).
func (r *router) answered(addr, leaderHdr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur = addr
	r.proven[addr] = true
	if leader := r.follow(addr, leaderHdr); leader != "" {
		r.cur = leader
		r.avoid = ""
	}
}

// failed records a retryable failure of an attempt sent to addr. connErr is
// true when addr could not be reached at all; leaderHdr is the leader header
// of the failed answer, if there was one.
func (r *router) failed(addr, leaderHdr string, connErr bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if connErr {
		r.avoid = addr
	}
	if leader := r.follow(addr, leaderHdr); leader != "" {
		r.cur = leader
		return
	}
	if r.cur != addr {
		return // a concurrent call has already moved on
	}
	if i := slices.Index(r.seeds, addr); i >= 0 {
		r.cur = r.seeds[(i+1)%len(r.seeds)]
		r.next = (i + 2) % len(r.seeds)
		return
	}
	r.cur = r.seeds[r.next]
	r.next = (r.next + 1) % len(r.seeds)
}

// leaderAddress normalizes a leader header received from addr, taking the
// scheme of addr when the header has none. It returns "" for an empty or
// malformed header.
func leaderAddress(addr, hdr string) string {
	if hdr == "" {
		return ""
	}
	scheme := "http"
	if u, err := url.Parse(addr); err == nil {
		scheme = u.Scheme
	}
	leader, err := normalizeWithScheme(hdr, scheme)
	if err != nil {
		return ""
	}
	return leader
}

// Whom the client follows when an answer names the leader.
//
// An answer's X-Tenure-Leader-Addr header is not authenticated: over plain
// HTTP anyone who can answer in a server's place can write it. Following
// an address only because an answer names it would send the next requests,
// with the ACL token in every one, wherever that answer pointed. So the
// client follows a named leader only when it is one of the configured
// Addresses, or when the client verifies the certificate of whoever answers
// there against a CA it was given (TLSConfig.CAFile, or RootCAs of
// TLSConfig.Config): then only a holder of a certificate from the cluster's
// CA can answer, and the token goes nowhere else. Config.TrustLeaderHints
// lifts the rule, for networks where every answer comes from a server.
// A leader that is not followed is still reached: the server that was
// asked forwards writes and renewals to it, at the cost of one hop.

// leaderTrust returns the rule for leader addresses outside Addresses:
// nil when only configured addresses are followed.
func (c *Config) leaderTrust() func(leader string) bool {
	if c.TrustLeaderHints {
		return func(string) bool { return true }
	}
	if c.HTTPClient != nil || !c.TLS.verifiesWithOwnCA() {
		return nil
	}
	return func(leader string) bool { return strings.HasPrefix(leader, "https://") }
}

// verifiesWithOwnCA reports whether the client's connections verify the
// servers' certificates against CAs given in the configuration, not the
// system's roots.
func (t TLSConfig) verifiesWithOwnCA() bool {
	if t.Config != nil {
		if t.Config.InsecureSkipVerify {
			return false
		}
		return t.CAFile != "" || t.Config.RootCAs != nil
	}
	return t.CAFile != ""
}
