package wire

// Headers of the HTTP API v1.
const (
	HeaderLeaderAddr  = "X-Tenure-Leader-Addr"
	HeaderIndex       = "X-Tenure-Index"
	HeaderLastContact = "X-Tenure-Last-Contact"
	HeaderKnownLeader = "X-Tenure-Known-Leader"
	// HeaderRelease says what a release did: "freed" (this request freed
	// the lease) or "gone" (the lease had ended already).
	HeaderRelease = "X-Tenure-Release"
	// HeaderOldestIndex is on a 410 compacted answer of GET /v1/events:
	// the oldest index the server's event history serves.
	HeaderOldestIndex = "X-Tenure-Oldest-Index"
	// HeaderAppliedIndex is the answering node's applied Raft index, and
	// HeaderBehind how many entries it trails the leader's commit index
	// as the node knows it.
	HeaderAppliedIndex = "X-Tenure-Applied-Index"
	HeaderBehind       = "X-Tenure-Behind"
	// HeaderNotReady is on answers of a node that is not ready because
	// its disk fails writes or it is too far behind the leader: its value
	// says why. A stale read from such a node may miss recent changes (a
	// 404 for a key that exists).
	HeaderNotReady = "X-Tenure-Not-Ready"
	// HeaderContentHash is the hash of what GET /v1/status or GET
	// /v1/members answered (the status without its indexes and times):
	// pass it back as ?hash= to wait until that changes.
	HeaderContentHash = "X-Tenure-Content-Hash"
	// HeaderToken carries the secret of the request's ACL token. The
	// servers also accept "Authorization: Bearer <secret>".
	HeaderToken = "X-Tenure-Token"
)
