package client

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
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
// RetryMax retries are made (none, with r.failoverOnly, but for failovers);
// a failover failure is retried beyond RetryMax
// for as long as the waits stay within the call's timeout (Config.Timeout,
// or the call's own), so that a call spans an election. The caller's
// context bounds every retry in any case.
func (c *Client) mayRetry(r *request, attempt int, failover bool, waited time.Duration) bool {
	if c.cfg.RetryMax == 0 {
		return false
	}
	if attempt <= c.cfg.RetryMax && !r.failoverOnly {
		return true
	}
	return failover && waited <= cmp.Or(r.timeout, c.cfg.Timeout)
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

// SetupError is a failure that no retry can cure: the client's own
// configuration does not fit the server at Address. The server speaks
// plain HTTP to an https:// address, or TLS to an http:// one; the
// client cannot verify the server's certificate, or the server refuses
// the client's; or the address answers, but not as tenure's HTTP API (a
// Raft or gossip port, another program). The client does not retry it:
// it moves on to the next of Config.Addresses, and the call fails with
// it once every address has failed so. Only configured addresses are
// judged so; a leader address that an answer named is left as the router
// leaves any address that fails.
//
// It wraps what the attempt failed with: a *tls.CertificateVerificationError,
// http.ErrSchemeMismatch, an *APIError, ...
type SetupError struct {
	// Address is the server, "scheme://host:port".
	Address string
	// Problem says what is wrong and what to do, for people.
	Problem string
	// Settings are the Config fields that fix it, likeliest first:
	// "Addresses", "TLS.CAFile", "TLS.CertFile" (with TLS.KeyFile),
	// "TLS.ServerName".
	Settings []string
	// Err is what the attempt failed with.
	Err error
}

// Error implements error: "<address>: <problem> (<cause>); set <settings>".
func (e *SetupError) Error() string {
	help := make([]string, len(e.Settings))
	for i, s := range e.Settings {
		help[i] = settingHelp[s]
	}
	return fmt.Sprintf("%s: %s (%v); set %s", e.Address, e.Problem, e.Err, strings.Join(help, " or "))
}

func (e *SetupError) Unwrap() error { return e.Err }

// settingHelp names each setting of SetupError.Settings with the
// environment variable DefaultConfig reads it from.
var settingHelp = map[string]string{
	"Addresses":      "Config.Addresses (" + EnvHTTPAddr + ")",
	"TLS.CAFile":     "Config.TLS.CAFile (" + EnvCACert + ")",
	"TLS.CertFile":   "Config.TLS.CertFile and KeyFile (" + EnvClientCert + ", " + EnvClientKey + ")",
	"TLS.ServerName": "Config.TLS.ServerName",
}

// setupProblem returns the *SetupError that err, the failure of an
// attempt sent to addr, proves; nil when a retry might cure it. closes
// counts how often addr closed a connection without an answer in this
// call, this attempt included. An address that has answered a call of
// this client before is tenure's HTTP API: only TLS failures count there.
func (c *Client) setupProblem(addr string, err error, closes int) *SetupError {
	proven := c.route.hasAnswered(addr)
	se := &SetupError{Address: addr, Err: err}
	var (
		ae  *APIError
		rh  tls.RecordHeaderError
		cve *tls.CertificateVerificationError
		ua  x509.UnknownAuthorityError
		he  x509.HostnameError
		oe  *net.OpError
	)
	switch {
	case errors.As(err, &ae):
		switch {
		case ae.Code != "":
			return nil // tenure's own answer
		case ae.StatusCode == http.StatusBadRequest && strings.HasPrefix(addr, "http://") && strings.Contains(strings.ToUpper(ae.Message), "HTTPS"):
			se.Problem = "the server speaks TLS, not plain HTTP: address it as https://host:port"
			se.Settings = []string{"Addresses"}
		case !proven && (ae.StatusCode == http.StatusNotFound || ae.StatusCode == http.StatusMethodNotAllowed):
			se.Problem = fmt.Sprintf("the server answered %d without tenure's error body: this is not tenure's HTTP API (the wrong port?)", ae.StatusCode)
			se.Settings = []string{"Addresses"}
		default:
			return nil
		}
	case errors.Is(err, http.ErrSchemeMismatch):
		se.Problem = "the server speaks plain HTTP, not TLS: address it as http://host:port (an address without a scheme means https once a TLS setting is made)"
		se.Settings = []string{"Addresses"}
		if c.cfg.TLS.CAFile != "" {
			se.Settings = append(se.Settings, "TLS.CAFile")
		}
	case errors.As(err, &rh):
		se.Problem = "the server answered neither TLS nor HTTP: this is not tenure's HTTP API (the wrong port?)"
		se.Settings = []string{"Addresses"}
	case errors.As(err, &cve) && errors.As(err, &he):
		se.Problem = "the server's certificate is not valid for this host: use an address that the certificate names, or the name to verify"
		se.Settings = []string{"Addresses", "TLS.ServerName"}
	case errors.As(err, &cve) && errors.As(err, &ua):
		se.Problem = "the server's certificate is not signed by a CA that the client trusts: give the client the cluster's CA certificate"
		se.Settings = []string{"TLS.CAFile"}
	case errors.As(err, &cve):
		se.Problem = "the client cannot verify the server's certificate"
		se.Settings = []string{"TLS.CAFile"}
	case errors.As(err, &oe) && oe.Op == "remote error":
		// A TLS alert: the server refused the handshake.
		if c.noClientCert() {
			se.Problem = "the server refused the TLS handshake: it requires a client certificate"
		} else {
			se.Problem = "the server refused the TLS handshake: it does not accept the client certificate (is it signed by the cluster's CA?)"
		}
		se.Settings = []string{"TLS.CertFile"}
	case closes >= 2 && !proven && strings.HasPrefix(addr, "https://"):
		// Under TLS 1.3 the client's handshake ends before the server
		// checks the client's certificate: a server that refuses it may
		// reset the connection under the request instead of sending an
		// alert the client reads (the case above).
		if c.noClientCert() {
			se.Problem = fmt.Sprintf("the server closed %d connections after the TLS handshake without an answer: it requires a client certificate (or this is not tenure's HTTP API)", closes)
		} else {
			se.Problem = fmt.Sprintf("the server closed %d connections after the TLS handshake without an answer: it does not accept the client certificate (is it signed by the cluster's CA?), or this is not tenure's HTTP API", closes)
		}
		se.Settings = []string{"TLS.CertFile", "Addresses"}
	case closes >= 2 && !proven:
		se.Problem = fmt.Sprintf("the server closed %d connections without an HTTP answer: this is not tenure's HTTP API (a Raft or gossip port?)", closes)
		se.Settings = []string{"Addresses"}
	default:
		return nil
	}
	return se
}

// noClientCert reports whether the client presents no certificate.
func (c *Client) noClientCert() bool {
	return c.cfg.TLS.CertFile == "" && (c.cfg.TLS.Config == nil || len(c.cfg.TLS.Config.Certificates) == 0)
}

// closedUnanswered reports whether err is a connection that was
// established and then closed or reset before any answer came: what a
// port that does not speak HTTP does, and, once, a server that crashed.
func closedUnanswered(err error) bool {
	var te *transportError
	if !errors.As(err, &te) || te.refused() {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// isSetupError reports whether err is a *SetupError.
func isSetupError(err error) bool {
	var se *SetupError
	return errors.As(err, &se)
}
