package client

import (
	"net/http"
	"testing"
)

// What the tests of package client_test (worker_log_test.go) borrow from
// this package's tests.

// NewFakeTenure is newFakeTenure.
func NewFakeTenure(t *testing.T) *fakeTenure { return newFakeTenure(t) }

// Serve is serve.
func (f *fakeTenure) Serve(w http.ResponseWriter, r *http.Request) { f.serve(w, r) }

// Revoke is revoke.
func (f *fakeTenure) Revoke(key string) { f.revoke(key) }

// NewTestClient is newTestClient.
func NewTestClient(t *testing.T, addrs ...string) *Client {
	c, _ := newTestClient(t, addrs...)
	return c
}

// LogBuffer is logBuffer.
type LogBuffer = logBuffer

// WaitUntil is waitUntil.
var WaitUntil = waitUntil

// WriteJSON is writeJSON.
var WriteJSON = writeJSON
