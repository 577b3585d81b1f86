// Package lessor keeps the deadline of every held lease while this server
// leads: one entry per lease in a map and a min-heap, on the injected
// monotonic clock (clock.Clock). The leader promotes it when it establishes leadership
// (Promote) and demotes it at once when it loses it (Demote); in between,
// grants and renewals restart deadlines, and the proposer asks it which
// leases have expired (Expired, Next, Changed).
//
// It only decides when a deadline has passed. It must never write to Raft,
// free a lease itself, or read the wall clock for a deadline (the wall
// clock only stamps the renewal time shown to people): the proposer turns
// its expiries into Raft entries, and the state machine frees the lease.
// A renewal it refuses, it refuses for good: a passed deadline is final.
//
// Builds with the tag tenure_unsafe_handover (a negative control of the
// fault suite, never a release) hand every lease over with no time left
// (unsafe_handover_on.go).
package lessor
