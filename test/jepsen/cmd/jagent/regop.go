package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/test/jepsen/history"
)

// Operations of the lease register.
const (
	fAcquire = "acquire"
	fRenew   = "renew"
	fRelease = "release"
	fRead    = "read"
)

// maxAnswer bounds the body read from one answer of a server.
const maxAnswer = 1 << 20

// regOp is one operation of the lease register: one HTTP request.
type regOp struct {
	f      string
	key    string
	holder string
	token  uint64 // renew and release
	ttl    int64  // acquire, nanoseconds
}

// invoke is the Invoke event of op (without T, Proc and Op).
func (op regOp) invoke() history.Event {
	e := history.Event{Kind: history.Invoke, F: op.f, Key: op.key, Holder: op.holder}
	switch op.f {
	case fAcquire:
		e.TTL = op.ttl
	case fRenew, fRelease:
		e.Token = op.token
	}
	return e
}

// request builds op's request to the server at base (docs/http-api.md).
func (op regOp) request(ctx context.Context, base string) (*http.Request, error) {
	var (
		method, path string
		body         any
		query        string
	)
	key := escapeSegments(op.key)
	switch op.f {
	case fAcquire:
		method, path = http.MethodPut, "/v1/leases/"+key
		body = map[string]string{"holder": op.holder, "ttl": durationString(op.ttl), "secret": leaseSecret(op.holder)}
	case fRenew:
		method, path = http.MethodPost, "/v1/renew/"+key
		body = map[string]any{"holder": op.holder, "token": op.token, "secret": leaseSecret(op.holder)}
	case fRelease:
		method, path = http.MethodDelete, "/v1/leases/"+key
		query = "?holder=" + url.QueryEscape(op.holder) + "&token=" + strconv.FormatUint(op.token, 10) +
			"&secret=" + leaseSecret(op.holder)
	case fRead:
		method, path = http.MethodGet, "/v1/leases/"+key
	default:
		return nil, fmt.Errorf("unknown operation %q", op.f)
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode the %s body: %w", op.f, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path+query, rd)
	if err != nil {
		return nil, fmt.Errorf("build the %s request: %w", op.f, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// leaseSecret is the lease secret of holder: each holder of the register
// workload is one client, so its secret is a function of its name (the
// history and its checkers know holders, not secrets), and its retries
// and re-acquisitions are answered as the same holder's.
func leaseSecret(holder string) string {
	sum := sha256.Sum256([]byte("tenure-jepsen-lease-secret:" + holder))
	return hex.EncodeToString(sum[:16])
}

// durationString formats nanoseconds as a Go duration string ("2s").
func durationString(ns int64) string {
	return time.Duration(ns).String()
}

// classify turns the answer to an operation f into its completion event
// (Kind and the fields of the answer; the caller sets T, Proc, Op, F and
// Key):
//
//   - the success answers of each operation, and a read of a key never
//     seen (404 not_found: free, token 0), are OK;
//   - a held acquire (409 held), a renewal of a lost lease (404
//     lease_lost), any other 4xx (429 included) and 503 no_leader are
//     Fail: the server surely did not act;
//   - everything else (leadership_lost, timeout, other 5xx, an unexpected
//     status, a success body that cannot be read) is Info: the outcome is
//     unknown.
func classify(f string, status int, body []byte) history.Event {
	if status >= 200 && status <= 299 {
		return classifySuccess(f, status, body)
	}
	var e wire.ErrorBody
	_ = json.Unmarshal(body, &e) // an answer without our error body leaves e empty
	code := e.Error
	if code == "" {
		code = "http_" + strconv.Itoa(status)
	}
	switch {
	case f == fAcquire && status == http.StatusConflict && e.Error == "held":
		out := history.Event{Kind: history.Fail, Err: e.Error}
		if e.Lease != nil {
			out.Holder, out.Token = e.Lease.Holder, e.Lease.Token
		}
		return out
	case f == fRenew && status == http.StatusNotFound && e.Error == "lease_lost":
		return history.Event{Kind: history.Fail, Err: e.Error, State: e.Reason}
	case f == fRead && status == http.StatusNotFound && e.Error == "not_found":
		return history.Event{Kind: history.OK, State: "free"}
	case status >= 400 && status <= 499:
		return history.Event{Kind: history.Fail, Err: code}
	case status == http.StatusServiceUnavailable && e.Error == "no_leader":
		return history.Event{Kind: history.Fail, Err: code}
	}
	return history.Event{Kind: history.Info, Err: code}
}

// classifySuccess classifies a 2xx answer to f.
func classifySuccess(f string, status int, body []byte) history.Event {
	expected := map[string]int{fAcquire: http.StatusCreated, fRenew: http.StatusOK, fRelease: http.StatusNoContent, fRead: http.StatusOK}
	if status != expected[f] && (f != fAcquire || status != http.StatusOK) {
		return history.Event{Kind: history.Info, Err: "unexpected_http_" + strconv.Itoa(status)}
	}
	if f == fRelease {
		return history.Event{Kind: history.OK}
	}
	var l client.LeaseInfo
	if err := json.Unmarshal(body, &l); err != nil {
		return history.Event{Kind: history.Info, Err: "bad_answer: " + err.Error()}
	}
	switch f {
	case fAcquire:
		return history.Event{Kind: history.OK, Token: l.Token, Created: status == http.StatusCreated, Holder: l.Holder}
	case fRenew:
		return history.Event{Kind: history.OK, Token: l.Token}
	}
	return history.Event{Kind: history.OK, State: string(l.State), Holder: l.Holder, Token: l.Token}
}

// classifyErr is the completion of an operation that got no answer. A
// request whose connection could not even be made (refused, unreachable,
// dial timeout) surely did nothing: Fail. Any other failure (a timeout or
// a broken connection after the request may have gone out) is Info.
func classifyErr(err error) history.Event {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" && oe.Err != nil {
		return history.Event{Kind: history.Fail, Err: "dial: " + oe.Err.Error()}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return history.Event{Kind: history.Info, Err: "client_timeout"}
	}
	return history.Event{Kind: history.Info, Err: "net: " + err.Error()}
}
