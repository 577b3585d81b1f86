// Package httpapi serves tenure's HTTP API v1 (docs/http-api.md) on every
// node: JSON routes over gorilla/mux, the mapping from cluster errors to
// stable error codes, forwarding of writes and linearizable reads to the
// leader, Consul-style blocking queries, health and readiness, Prometheus
// metrics and the inspection page.
//
// docs/request-paths.md follows each request from this package's handlers
// to the state machine and back, with the status and code of each failure.
//
// It owns no state and makes no decision about leases: package cluster does.
// It is internal to tenure; the stable public API is package client, which
// speaks this package's wire format. Both take the bodies, headers and codes
// from package client/wire; this package must never import package client.
package httpapi
