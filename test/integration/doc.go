// Package integration holds black-box tests of the tenure binary: each test
// starts real `tenure server` processes on loopback ports, talks to them over
// the HTTP API v1 (docs/http-api.md) with net/http or with the public client
// package, runs `tenure lock` and `tenure elect` processes against them,
// drives the inspection page (/ui) in headless Chromium (page_test.go,
// browser_test.go; skipped without chromium, failed under CI=true), and
// kills every process it started when it ends.
//
// The package owns nothing but tests. It must never import the server's
// packages (cluster, fsm, httpapi): what it checks is what a user of the
// binary and of the client package sees.
//
// Run it with
//
//	go test -race -count=1 ./test/integration/
//
// TestMain builds ./cmd/tenure once per run.
package integration
