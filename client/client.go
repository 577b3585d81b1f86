package client

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client/internal/wait"
	"github.com/tenure-io/tenure/client/wire"
)

// maxResponseBytes bounds the body the client reads from one answer.
const maxResponseBytes = 64 << 20

// Client talks to a tenure cluster. Create it with New. It is safe for
// concurrent use. The calls of the low-level layer (Leases, Status, ...)
// start no goroutines; the leases of Acquire are kept alive by one renewer
// goroutine per Client, which runs only while at least one of them is held
// (see Client.Acquire).
type Client struct {
	cfg   Config
	http  *http.Client
	log   hclog.Logger
	route *router

	// keep renews the leases of Acquire; created by New.
	keep *keeper
	// streams carries the calls of one lease (stream.go); nil when
	// Config.DisableStream or Config.HTTPClient is set.
	streams *streams

	// sleep waits d or until ctx is done, returning ctx.Err() then.
	// jitter returns a uniformly random duration in [0, d].
	// Tests replace both.
	sleep  func(ctx context.Context, d time.Duration) error
	jitter func(d time.Duration) time.Duration
}

// Meta describes the attempt that produced an answer.
type Meta struct {
	// SentAt is the local time, with its monotonic reading, taken just
	// before the answering attempt was sent. A holder counts the lifetime
	// of a lease from it: the cluster keeps the lease for at least TTL
	// after this instant (earlier failed attempts do not count).
	SentAt time.Time
	// Address is the server that answered, as "scheme://host:port".
	Address string
	// Index is X-Tenure-Index: the Raft index to pass as
	// QueryOptions.WaitIndex in the next blocking read; 0 if absent.
	Index uint64
	// LastContact is X-Tenure-Last-Contact: how stale the answering node
	// may be: the longer of the time since it last heard from the leader
	// and the time its applied index has trailed the leader's commit index
	// (0 on an up-to-date leader, and when absent). It is negative when
	// the node has never heard from a leader.
	LastContact time.Duration
	// AppliedIndex is X-Tenure-Applied-Index and Behind is
	// X-Tenure-Behind: the answering node's applied index and how many
	// entries it trails the leader's commit index (0 when absent).
	AppliedIndex, Behind uint64
	// NotReady is X-Tenure-Not-Ready: why the answering node is not ready
	// (a failing disk, or too far behind the leader); empty when it is.
	// A stale read with NotReady set may be missing recent changes: read
	// again from another node, or without stale.
	NotReady string
	// KnownLeader is X-Tenure-Known-Leader; when that header is absent, it
	// says whether the answer named a leader in X-Tenure-Leader-Addr.
	KnownLeader bool
	// ContentHash is X-Tenure-Content-Hash, on status and member reads:
	// pass it to Client.WaitStatus or Client.WaitMembers to wait until
	// the answer changes.
	ContentHash string
	// Created is true when an acquire answered 201: a new grant. It is
	// false for 200: the holder already held the lease.
	Created bool
	// AlreadyGone is true when a release found the lease ended already
	// (released, expired, revoked or superseded): nothing was freed
	// (X-Tenure-Release: gone). When the answer came to a retry of an
	// attempt whose outcome was unknown, that attempt may have freed it.
	AlreadyGone bool
}

// New validates cfg and returns a Client. It does not contact the cluster.
func New(cfg *Config) (*Client, error) {
	if cfg == nil {
		return nil, errors.New("config: nil Config")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: *cfg, http: cfg.HTTPClient, log: cmp.Or(cfg.Logger, hclog.NewNullLogger())}
	seeds := make([]string, len(cfg.Addresses))
	for i, a := range cfg.Addresses {
		seeds[i], _ = cfg.normalizeAddress(a) // checked by Validate
	}
	c.cfg.Addresses = seeds
	c.route = newRouter(seeds, cfg.leaderTrust())
	if c.http == nil {
		tc, err := cfg.TLS.Build()
		if err != nil {
			return nil, err
		}
		if !cfg.DisableStream {
			// A copy of its own: the HTTP transport changes its TLS
			// settings on first use.
			var stc *tls.Config
			if tc != nil {
				stc = tc.Clone()
			}
			c.streams = newStreams(stc)
		}
		c.http = defaultHTTPClient(tc)
	}
	c.sleep = wait.Sleep
	c.jitter = func(d time.Duration) time.Duration {
		if d <= 0 {
			return 0
		}
		return rand.N(d + 1)
	}
	if c.cfg.Holder == "" {
		c.cfg.Holder = NewHolderID()
	}
	if c.cfg.LeaseSecret == "" {
		c.cfg.LeaseSecret = NewLeaseSecret()
	}
	c.keep = newKeeper(c)
	return c, nil
}

// Holder returns the holder identity of this Client: Config.Holder, or the
// NewHolderID() that New chose when it was empty.
func (c *Client) Holder() string { return c.cfg.Holder }

// Config returns the client's configuration as New completed it (a copy).
func (c *Client) Config() Config { return c.cfg }

// LeaseSecret returns the lease secret of this Client: Config.LeaseSecret,
// or the NewLeaseSecret() that New chose when it was empty. Its leases are
// held under it; whoever knows it may act as their holder.
func (c *Client) LeaseSecret() string { return c.cfg.LeaseSecret }

// defaultHTTPClient keeps enough idle connections per server for a busy
// process, and never follows redirects: the API does not redirect, and
// following a redirect could turn a POST into a GET. tc configures HTTPS
// when it is not nil.
func defaultHTTPClient(tc *tls.Config) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 512
	t.MaxIdleConnsPerHost = 128
	if tc != nil {
		t.TLSClientConfig = tc
	}
	return &http.Client{
		Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// NewHolderID returns a holder identity that a restarted process never
// reuses: "<hostname>-<pid>-<8 random hex digits>".
func NewHolderID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	// 8 of the 32 random hex digits of a lease secret.
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), wire.NewLeaseSecret()[:8])
}

// request is one logical call.
type request struct {
	method string
	path   string // escaped path, from "/v1/..."
	query  map[string]string
	body   any
	// wait is how long the server may hold the request on purpose; it is
	// added to the per-attempt timeout.
	wait time.Duration
	// unsafeRetry marks calls that must not be repeated when the outcome of
	// an attempt is unknown; they are retried only when the server surely
	// did not act (connection refused, 429, 503 no_leader).
	unsafeRetry bool
	// failoverOnly retries only the failures of a leader change
	// (failingOver), within the call's timeout, not up to RetryMax.
	failoverOnly bool
	// timeout, when not 0, replaces Config.Timeout for this call.
	timeout time.Duration
	// raw, when not nil, is sent as it is (application/octet-stream)
	// instead of body.
	raw []byte
	// maxAnswer, when not 0, replaces maxResponseBytes; an answer
	// longer than that is an error.
	maxAnswer int64
}

// response is a successful (2xx) answer.
type response struct {
	status int
	body   []byte
	meta   *Meta
}

// attemptTimeout is the time limit of one attempt of r.
func (c *Client) attemptTimeout(r *request) time.Duration {
	return cmp.Or(r.timeout, c.cfg.Timeout) + r.wait
}

// do sends r, retrying retryable failures with backoff until it gets an
// answer, a non-retryable error, or ctx is done, or it runs out of retries
// (mayRetry). A non-retryable answer is returned as *APIError.
func (c *Client) do(ctx context.Context, r *request) (*response, error) {
	body := r.raw
	if r.body != nil && body == nil {
		var err error
		if body, err = json.Marshal(r.body); err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
	}
	var waited time.Duration // the sum of the backoff waits so far
	var tried outcomes
	closes := map[string]int{}  // connections closed without an answer, by address
	misfit := map[string]bool{} // configured addresses that failed with a *SetupError
	for attempt := 1; ; attempt++ {
		addr := c.route.pick()
		resp, leaderHdr, err := c.attempt(ctx, addr, r, body)
		if err == nil {
			c.route.answered(addr, leaderHdr)
			return resp, nil
		}
		var te *transportError
		if errors.As(err, &te) && ctx.Err() != nil {
			// An attempt the caller's deadline cut off tells less than a
			// server's earlier answer (say no_leader), which explain
			// then wraps.
			if !isAnswer(tried.last[addr]) {
				tried.note(addr, err)
			}
			return nil, fmt.Errorf("%w (attempt %d: %w)", ctx.Err(), attempt, tried.explain(addr, err))
		}
		if closedUnanswered(err) {
			closes[addr]++
		}
		if slices.Contains(c.route.seeds, addr) { // a configured address
			if se := c.setupProblem(addr, err, closes[addr]); se != nil {
				err = se
			}
		}
		tried.note(addr, err)
		if isSetupError(err) {
			// No retry cures it; another configured address may answer.
			again := misfit[addr]
			misfit[addr] = true
			if again || len(misfit) == len(c.cfg.Addresses) {
				if len(tried.order) == 1 {
					return nil, err
				}
				return nil, tried.explain(addr, err)
			}
			c.route.failed(addr, "", false)
			continue
		}
		retry, connErr, retryAfter := classify(err, r.unsafeRetry)
		if !retry {
			return nil, err
		}
		c.route.failed(addr, leaderHdr, connErr)
		delay := c.backoff(attempt, retryAfter)
		if !c.mayRetry(r, attempt, failingOver(err), waited+delay) {
			return nil, fmt.Errorf("giving up after %d attempts: %w", attempt, tried.explain(addr, err))
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < delay {
			return nil, fmt.Errorf("giving up after %d attempts, the next would start after the deadline: %w", attempt, tried.explain(addr, err))
		}
		c.log.Debug("request failed, retrying", "method", r.method, "path", r.path,
			"address", addr, "attempt", attempt, "delay", delay, "error", err)
		waited += delay
		if serr := c.sleep(ctx, delay); serr != nil {
			return nil, fmt.Errorf("%w (after %d attempts: %w)", serr, attempt, tried.explain(addr, err))
		}
	}
}

// backoff is the delay before retry number attempt (from 1): full jitter
// over an exponentially growing ceiling, but never less than retryAfter.
func (c *Client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	ceiling := c.cfg.RetryMaxDelay
	if shift := attempt - 1; shift < 32 {
		if d := c.cfg.RetryBaseDelay << shift; d > 0 && d < ceiling {
			ceiling = d
		}
	}
	d := c.jitter(ceiling)
	if d < retryAfter {
		d = retryAfter
	}
	return d
}

// attempt sends r once to addr. On failure it returns a *transportError or
// an *APIError, with the leader header of the answer if there was one.
func (c *Client) attempt(ctx context.Context, addr string, r *request, body []byte) (*response, string, error) {
	if c.streamable(r) {
		if resp, leaderHdr, ok, err := c.attemptStream(ctx, addr, r, body); ok {
			return resp, leaderHdr, err
		}
	}
	actx, cancel := context.WithTimeout(ctx, c.attemptTimeout(r))
	defer cancel()

	u := addr + r.path
	if q := encodeQuery(r.query); q != "" {
		u += "?" + q
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, r.method, u, rd)
	if err != nil {
		return nil, "", fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "tenure-go-client/1")
	if r.raw != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	} else if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.cfg.Token != "" {
		req.Header.Set(HeaderToken, c.cfg.Token)
	}

	sentAt := time.Now()
	hr, err := c.http.Do(req)
	if err != nil {
		return nil, "", &transportError{err: err}
	}
	defer hr.Body.Close()
	limit := cmp.Or(r.maxAnswer, maxResponseBytes)
	data, err := io.ReadAll(io.LimitReader(hr.Body, limit+1))
	if err != nil {
		return nil, hr.Header.Get(HeaderLeaderAddr), &transportError{err: fmt.Errorf("read answer: %w", err)}
	}
	if int64(len(data)) > limit {
		return nil, hr.Header.Get(HeaderLeaderAddr), fmt.Errorf("answer of %s %s exceeds %d bytes", r.method, r.path, limit)
	}
	return c.answer(hr, data, addr, sentAt)
}

// answer is the response, or the *APIError, of the answer hr with body
// data from addr to an attempt sent at sentAt, and its leader header.
func (c *Client) answer(hr *http.Response, data []byte, addr string, sentAt time.Time) (*response, string, error) {
	leaderHdr := hr.Header.Get(HeaderLeaderAddr)
	if hr.StatusCode < 200 || hr.StatusCode > 299 {
		return nil, leaderHdr, decodeAPIError(hr, data)
	}
	meta := &Meta{SentAt: sentAt, Address: addr, KnownLeader: leaderHdr != ""}
	meta.Index, _ = strconv.ParseUint(hr.Header.Get(HeaderIndex), 10, 64)
	if ms, err := strconv.ParseFloat(hr.Header.Get(HeaderLastContact), 64); err == nil {
		meta.LastContact = wire.LastContact(ms)
	}
	if v := hr.Header.Get(HeaderKnownLeader); v != "" {
		meta.KnownLeader, _ = strconv.ParseBool(v)
	}
	meta.AppliedIndex, _ = strconv.ParseUint(hr.Header.Get(HeaderAppliedIndex), 10, 64)
	meta.Behind, _ = strconv.ParseUint(hr.Header.Get(HeaderBehind), 10, 64)
	meta.NotReady = hr.Header.Get(HeaderNotReady)
	meta.ContentHash = hr.Header.Get(HeaderContentHash)
	meta.AlreadyGone = hr.Header.Get(HeaderRelease) == "gone"
	return &response{status: hr.StatusCode, body: data, meta: meta}, leaderHdr, nil
}

// call makes the request r and decodes its JSON answer into a new T; what
// names the answer in the error a bad body gives ("decode what: ...").
func call[T any](ctx context.Context, c *Client, r *request, what string) (*T, *Meta, error) {
	resp, err := c.do(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	var out T
	if u, ok := any(&out).(json.Unmarshaler); ok {
		// A type that decodes itself (LeaseInfo) checks its input as it
		// reads it: json.Unmarshal would scan the body once more first.
		err = u.UnmarshalJSON(bytes.TrimSpace(resp.body))
	} else {
		err = json.Unmarshal(resp.body, &out)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("decode %s: %w", what, err)
	}
	return &out, resp.meta, nil
}

// callOnly is call for the calls whose answer leaves out the Meta.
func callOnly[T any](ctx context.Context, c *Client, r *request, what string) (*T, error) {
	out, _, err := call[T](ctx, c, r, what)
	return out, err
}
