// Package wire is the contract of tenure's HTTP API v1 and of its gossip
// (docs/http-api.md), declared once: the JSON bodies of requests and
// answers, the headers, the error codes, the ACL rights, the event types,
// the reasons of a lost lease, the limits, the rule of group names and worker
// ids, what members announce over gossip and the keyring message, and what
// a backup holds. The servers (packages fsm, cluster, httpapi) and the Go
// client (packages client and client/worker) encode and decode these very
// declarations, so a field or a code cannot exist on one side only.
//
// The package imports the standard library only, and must never import
// anything else: every program that talks to tenure compiles it. It does
// no I/O (but for the random bytes of NewLeaseSecret) and keeps no state.
package wire
