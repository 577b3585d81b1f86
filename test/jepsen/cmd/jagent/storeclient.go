package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// errStaleToken is the error of a write that the store refused because it
// has seen a newer token for the key: a newer holder exists.
var errStaleToken = errors.New("stale token: the store has seen a newer holder")

// storeClient reads and writes the fenced register of a `jagent store`.
// Each call is one request, without retries, bounded by timeout.
type storeClient struct {
	base    string
	http    *http.Client
	timeout time.Duration
}

func newStoreClient(base string, timeout time.Duration) *storeClient {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 8
	return &storeClient{base: base, http: &http.Client{Transport: t}, timeout: timeout}
}

// read returns the value and highest token of key, as writer holding
// token (0: an unfenced read). It fails with an error matching
// errStaleToken when the store refused the token.
func (c *storeClient) read(ctx context.Context, key, writer string, token uint64) (regValue, error) {
	u := c.base + regPath(key) + "?writer=" + url.QueryEscape(writer)
	if token != 0 {
		u += "&token=" + strconv.FormatUint(token, 10)
	}
	return c.do(ctx, http.MethodGet, u, nil)
}

// write sets key to value under token, as writer who read base. It fails
// with an error matching errStaleToken when the store refused the token.
func (c *storeClient) write(ctx context.Context, key string, w regWrite) (regValue, error) {
	body, err := json.Marshal(w)
	if err != nil {
		return regValue{}, fmt.Errorf("encode the write: %w", err)
	}
	return c.do(ctx, http.MethodPost, c.base+regPath(key), body)
}

func (c *storeClient) do(ctx context.Context, method, u string, body []byte) (regValue, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return regValue{}, fmt.Errorf("store %s %s: %w", method, u, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return regValue{}, fmt.Errorf("store %s: %w", method, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxStoreBody))
	if err != nil {
		return regValue{}, fmt.Errorf("store %s %s: read the answer: %w", method, u, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e storeError
		_ = json.Unmarshal(data, &e) // a body that is not ours leaves e empty
		if resp.StatusCode == http.StatusConflict && e.Error == codeStaleToken {
			return regValue{}, fmt.Errorf("store %s %s: highest token %d: %w", method, u, e.Highest, errStaleToken)
		}
		return regValue{}, fmt.Errorf("store %s %s: status %d %s: %s", method, u, resp.StatusCode, e.Error, e.Message)
	}
	var v regValue
	if err := json.Unmarshal(data, &v); err != nil {
		return regValue{}, fmt.Errorf("store %s %s: decode the answer: %w", method, u, err)
	}
	return v, nil
}

// regPath is the path of key's register: its slashes stay slashes, the
// rest of each segment is escaped.
func regPath(key string) string {
	return regPrefix + escapeSegments(key)
}

// escapeSegments escapes each slash-separated segment of key.
func escapeSegments(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
