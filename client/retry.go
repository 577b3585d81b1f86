package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// transportError is an attempt that got no HTTP answer: the server could not
// be reached, the connection broke, or the attempt timed out.
type transportError struct {
	err error
}

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// refused reports whether the request surely never reached a server: the
// connection could not be established.
func (e *transportError) refused() bool {
	var op *net.OpError
	return errors.As(e.err, &op) && op.Op == "dial"
}

// classify decides whether a failed attempt may be retried, whether the
// server was unreachable (so the router stops following it), and how long
// the server asked the client to wait.
//
// Retryable: transport errors, 429, 502, 503 and 504. The Retry-After of a
// 503 no_leader or leadership_lost is ignored: the backoff of a failover
// starts at RetryBaseDelay. 502 is what a proxy
// answers when it cannot reach the server, so it counts as a connection
// error. Every lease operation is idempotent, so an unknown outcome
// (leadership_lost, timeout, a broken connection) is retried too, unless
// unsafe is set: then only failures that prove the server did not act are.
//
// A *SetupError is never retried.
func classify(err error, unsafe bool) (retry, connErr bool, retryAfter time.Duration) {
	if isSetupError(err) {
		return false, false, 0
	}
	var te *transportError
	if errors.As(err, &te) {
		return !unsafe || te.refused(), true, 0
	}
	var ae *APIError
	if !errors.As(err, &ae) {
		return false, false, 0
	}
	switch ae.StatusCode {
	case http.StatusTooManyRequests:
		return true, false, ae.RetryAfter
	case http.StatusServiceUnavailable:
		return !unsafe || ae.Code == wire.CodeNoLeader, false, serverRetryAfter(ae)
	case http.StatusBadGateway:
		return !unsafe, true, ae.RetryAfter
	case http.StatusGatewayTimeout:
		return !unsafe, false, ae.RetryAfter
	}
	return false, false, 0
}

// decodeAPIError builds the *APIError of a non-2xx answer. A body that is
// not the API's error JSON becomes the Message, shortened.
func decodeAPIError(hr *http.Response, data []byte) *APIError {
	ae := &APIError{
		StatusCode: hr.StatusCode,
		RetryAfter: parseRetryAfter(hr.Header.Get("Retry-After"), time.Now()),
	}
	ae.Index, _ = strconv.ParseUint(hr.Header.Get(HeaderIndex), 10, 64)
	ae.NotReady = hr.Header.Get(HeaderNotReady)
	var eb wire.CompactedBody
	if err := json.Unmarshal(data, &eb); err == nil && eb.Error != "" {
		ae.Code, ae.Message, ae.Field, ae.Reason, ae.Lease, ae.Group = eb.Error, eb.Message, eb.Field, eb.Reason, eb.Lease, eb.Group
		ae.OldestIndex = eb.OldestIndex
		return ae
	}
	msg := strings.TrimSpace(string(data))
	if len(msg) > 256 {
		msg = msg[:256] + "..."
	}
	if msg == "" {
		msg = http.StatusText(hr.StatusCode)
	}
	ae.Message = msg
	return ae
}

// encodeQuery encodes query parameters in key order, skipping empty values.
func encodeQuery(q map[string]string) string {
	v := url.Values{}
	for k, s := range q {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v.Encode()
}

// outcomes remembers what each address answered during one call, so that
// a call that gives up reports the most telling answer of all the servers
// it tried, not merely the last: with two servers of three down, the
// survivor's no_leader says more than the refused connection of whichever
// server was tried last.
type outcomes struct {
	order []string         // addresses in the order first tried
	last  map[string]error // the latest failure of each
}

func (o *outcomes) note(addr string, err error) {
	if o.last == nil {
		o.last = make(map[string]error, 3)
	}
	if _, seen := o.last[addr]; !seen {
		o.order = append(o.order, addr)
	}
	o.last[addr] = err
}

// explain returns the error of a call that gives up after its last
// attempt, to addr, ended in err: the most telling failure (a server's
// answer rather than a connection that failed), naming its server, and
// after it what the other servers did. It wraps the most telling failure,
// so errors.Is and errors.As see it.
func (o *outcomes) explain(addr string, err error) error {
	best, bestAddr := err, addr
	if !isAnswer(err) {
		for _, a := range o.order {
			if isAnswer(o.last[a]) {
				best, bestAddr = o.last[a], a
				break
			}
		}
	}
	var others []string
	for _, a := range o.order {
		if a != bestAddr {
			others = append(others, fmt.Sprintf("%s: %v", a, o.last[a]))
		}
	}
	if isAnswer(best) {
		best = &fromError{addr: bestAddr, err: best}
	}
	if len(others) == 0 {
		return best
	}
	return &triedError{best: best, others: others}
}

// isAnswer reports whether err is a server's answer, not a failure to get
// one.
func isAnswer(err error) bool {
	var ae *APIError
	return errors.As(err, &ae)
}

// fromError names the server that answered err.
type fromError struct {
	addr string
	err  error
}

func (e *fromError) Error() string { return e.addr + " answered: " + e.err.Error() }
func (e *fromError) Unwrap() error { return e.err }

// triedError is the most telling failure of a call, with what the other
// servers tried did.
type triedError struct {
	best   error
	others []string
}

func (e *triedError) Error() string {
	return e.best.Error() + "; also tried " + strings.Join(e.others, "; ")
}

func (e *triedError) Unwrap() error { return e.best }

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
