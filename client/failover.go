package client

import (
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// A failover (the leader stopped or crashed, the others elect a new one)
// shows the client connection errors and 503 answers (no_leader,
// leadership_lost) for as long as the election takes. The client retries
// them quickly at first, since a graceful hand-over completes in tens of
// milliseconds, and keeps retrying with a growing, jittered backoff long
// enough to span an election after a crash.

// failingOver reports whether err is what a client sees while the cluster
// has no serving leader: a server that cannot be reached or whose
// connection broke, a proxy's 502, or a 503 (no_leader, leadership_lost).
// An attempt that timed out is not: each costs a whole attempt timeout,
// so those stop at RetryMax.
func failingOver(err error) bool {
	var te *transportError
	if errors.As(err, &te) {
		var ne net.Error
		return !errors.As(te.err, &ne) || !ne.Timeout()
	}
	var ae *APIError
	return errors.As(err, &ae) && (ae.StatusCode == http.StatusServiceUnavailable || ae.StatusCode == http.StatusBadGateway)
}

// mayRetry reports whether retry number attempt (from 1) of r may be made
// after a retryable failure, when the waits of the call, this retry's
// included, add up to waited. RetryMax 0 disables retries. Otherwise up to
// RetryMax retries are made; a failover failure is retried beyond RetryMax
// for as long as the waits stay within the call's timeout (Config.Timeout,
// or the call's own), so that a call spans an election. The caller's
// context bounds every retry in any case.
func (c *Client) mayRetry(r *request, attempt int, failover bool, waited time.Duration) bool {
	if c.cfg.RetryMax == 0 {
		return false
	}
	if attempt <= c.cfg.RetryMax {
		return true
	}
	budget := c.cfg.Timeout
	if r.timeout > 0 {
		budget = r.timeout
	}
	return failover && waited <= budget
}

// serverRetryAfter is the wait the server asked for with Retry-After,
// except on a 503 no_leader or leadership_lost: the servers send whole
// seconds there, while a hand-over takes milliseconds, so the backoff of a
// failover starts at RetryBaseDelay instead.
func serverRetryAfter(ae *APIError) time.Duration {
	if ae.StatusCode == http.StatusServiceUnavailable && (ae.Code == wire.CodeNoLeader || ae.Code == wire.CodeLeadershipLost) {
		return 0
	}
	return ae.RetryAfter
}
