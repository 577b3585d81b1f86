// Package client is the Go client of tenure, and the only stable public API
// of the project.
//
// The package owns everything a program needs to talk to a tenure cluster
// over the HTTP API v1 (docs/http-api.md): encoding requests, decoding
// answers, turning the error codes of the API back into the sentinel errors
// declared here, following the Raft leader, and retrying the answers that
// the API declares safe to retry. A mistake in the client's setup that
// no retry cures (TLS against a plain server or the reverse, a
// certificate either side refuses, an address that is not tenure's HTTP
// API) fails at once as a [*SetupError] naming the Config field to fix.
//
// The low-level layer is [Client]: [Client.Leases] for acquire, renew,
// release, read and revoke, [Client.Status] and [Client.Members] for the
// cluster, and [Client.Operator] for operator actions. Each call makes one
// logical request, possibly in several attempts, and returns a [Meta] that
// says where and when the answering attempt was sent.
//
// docs/request-paths.md follows each request through the servers and says
// which failures leave its outcome unknown.
//
// On top of it: [Client.Acquire] returns a [Lease] that the Client keeps
// alive, and that ends (its context cancelled) the moment it is lost;
// [Client.AcquireSemaphore] takes one of N slots; [Client.Election] elects
// one leader among processes ([Election.Campaign], [Election.Run],
// [Election.Observe]); [FenceValidator] rejects writes that carry a
// superseded fencing token; [EventsAPI.Watch] (through [Client.Events])
// follows every change of leases, groups, controls and drains, in log
// order, across failovers.
//
// The package must never decide anything about lease ownership on its own
// clock other than from [Meta.SentAt]: the cluster's guarantee is that a
// lease is not freed before its TTL has passed since the holder sent the
// request that acquired or renewed it, so SentAt is the only local time a
// holder may count from.
//
// Two packages go with it, in the same module: client/wire declares the
// contract of the HTTP API (bodies, answers, headers, error codes, limits)
// that this package and the servers share (this package names the ones
// its calls use again, as aliases), and client/worker runs a placement worker over
// gossip. A program that only takes leases compiles neither memberlist nor
// anything of the servers.
//
// A Client is safe for concurrent use by many goroutines; [Client] says
// which goroutine it runs, and Observe, Run and Watch document the
// goroutines they start and when they end.
package client
