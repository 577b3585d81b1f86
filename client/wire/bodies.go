package wire

import "time"

// The JSON bodies of the HTTP API v1 (docs/http-api.md). Durations are Go
// duration strings ("10s") on the wire; the Go types of the client's calls
// (client.AcquireRequest, LeaseInfo, …) convert.

// AcquireBody is the body of PUT /v1/leases/{key}. Secret is the lease
// secret the caller chose (32 to 128 characters of [A-Za-z0-9_-]; the Go
// client sends 32 hex digits of crypto/rand); without one the server makes
// one. Either way the answer carries it, and only the caller knows it.
type AcquireBody struct {
	Holder   string            `json:"holder"`
	TTL      string            `json:"ttl,omitempty"`
	Wait     string            `json:"wait,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Secret   string            `json:"secret,omitempty"`
}

// LeaseRefBody is the body of POST /v1/renew/{key} and of DELETE
// /v1/leases/{key} (which also takes holder, token and secret in the
// query): the lease of Holder under Token, and its Secret.
type LeaseRefBody struct {
	Holder string `json:"holder"`
	Token  uint64 `json:"token"`
	Secret string `json:"secret"`
	// Load is the key's load now (0 to MaxLoad), reported with a renewal
	// of one lease (POST /v1/renew/{key}) as LeaseRef.Load is with a bulk
	// one; a release refuses it.
	Load *float64 `json:"load,omitempty"`
}

// RenewManyBody is the body of POST /v1/renew. Secret is the secret of
// every lease that names none of its own (LeaseRef.Secret).
type RenewManyBody struct {
	Holder string     `json:"holder"`
	Secret string     `json:"secret,omitempty"`
	Leases []LeaseRef `json:"leases"`
	// Brief asks for an answer without each renewed lease: key, token and
	// ok only (client.LeasesAPI.RenewManyBrief, and the keep-alive, which
	// needs no more).
	Brief bool `json:"brief,omitempty"`
	// Load, when set, is the holder's total load now (in the unit of
	// LeaseRef.Load, 0 to MaxLoad): what its keys cost and whatever else
	// it runs. The leader keeps a decayed average of it per worker.
	Load *float64 `json:"load,omitempty"`
}

// RenewManyResults is the answer of POST /v1/renew: one result per lease
// of the request, in its order.
type RenewManyResults struct {
	Results []RenewResultBody `json:"results"`
}

// RenewResultBody is one lease's outcome in RenewManyResults: OK with the
// renewed Lease, or an error Code (lease_lost) with its Reason.
type RenewResultBody struct {
	Key     string     `json:"key"`
	Token   uint64     `json:"token"`
	OK      bool       `json:"ok"`
	Lease   *LeaseInfo `json:"lease,omitempty"`
	Error   string     `json:"error,omitempty"`
	Message string     `json:"message,omitempty"`
	Reason  string     `json:"reason,omitempty"`
}

// LeaseList is one page of the answer of GET /v1/leases. Index is the
// Raft index of the view the page was read at, for a blocking query. Next
// is the cursor of the next page (the query parameter cursor), or empty
// when the listing is complete.
type LeaseList struct {
	Leases []LeaseInfo `json:"leases"`
	Index  uint64      `json:"index"`
	Next   string      `json:"next"`
}

// ErrorBody is the body of every error answer.
type ErrorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	// Field names the JSON field or query parameter to blame, if any.
	Field string `json:"field,omitempty"`
	// Reason says why a lease was lost (lease_lost only).
	Reason string `json:"reason,omitempty"`
	// Lease is the current lease (held and not_holder), left out unless
	// the ACL token has read on the key.
	Lease *LeaseInfo `json:"lease,omitempty"`
	// Group is the current group (cas_failed, when it exists).
	Group *GroupSummary `json:"group,omitempty"`
}

// KeyControlBody is the body of PUT /v1/controls/{key}: the key's new
// controls, replacing the old ones. The path names the key; the answer is
// a KeyControl.
type KeyControlBody struct {
	Disabled   bool     `json:"disabled"`
	Prohibited []string `json:"prohibited"`
}

// KeyControlEdit is the body of PATCH /v1/controls/{key}: a change applied
// on top of the key's controls as they are when it commits. Disabled, if
// present, sets it; the holders of Prohibit are added to the prohibited
// ones, then those of Allow removed.
type KeyControlEdit struct {
	Disabled *bool    `json:"disabled,omitempty"`
	Prohibit []string `json:"prohibit,omitempty"`
	Allow    []string `json:"allow,omitempty"`
}

// MemberList is the answer of GET /v1/members.
type MemberList struct {
	Members []Member `json:"members"`
}

// PromoteResult is the answer of POST /v1/operator/servers/{id}/promote:
// the server, now a voter, and the number of voters afterwards.
type PromoteResult struct {
	ID     string `json:"id"`
	Voters int    `json:"voters"`
}

// RemoveResult is the answer of DELETE /v1/operator/servers/{id}: the
// server removed, the voters left, the rules that force overrode (empty
// without force), and how to bring the server back.
type RemoveResult struct {
	ID      string   `json:"id"`
	Voters  int      `json:"voters"`
	Forced  []string `json:"forced,omitempty"`
	Readmit string   `json:"readmit"`
}

// ReadmitResult is the answer of POST /v1/operator/servers/{id}/readmit:
// the server as the Raft configuration now has it.
type ReadmitResult struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	Voter    bool   `json:"voter"`
}

// TransferBody is the body of POST /v1/operator/transfer-leader: the id of
// the server to hand leadership to, or empty for the most up-to-date one.
type TransferBody struct {
	ID string `json:"id,omitempty"`
}

// TransferResult is the answer of POST /v1/operator/transfer-leader.
type TransferResult struct {
	LeaderID string `json:"leader_id"`
}

// Health is the answer of GET /healthz.
type Health struct {
	Status string `json:"status"`
}

// Readiness is the answer of GET /readyz: 200 when Ready, 503 with the
// Reason otherwise.
type Readiness struct {
	Ready    bool   `json:"ready"`
	Role     string `json:"role"`
	LeaderID string `json:"leader_id"`
	Reason   string `json:"reason,omitempty"`
	// BehindEntries and BehindFor (a duration string) are how far, and
	// for how long, the node's applied index trails the leader's commit
	// index; DiskWriteErrors counts its failed Raft store writes, and
	// SnapshotWriteErrors its failed snapshots.
	BehindEntries       uint64 `json:"behind_entries"`
	BehindFor           string `json:"behind_for"`
	DiskWriteErrors     uint64 `json:"disk_write_errors"`
	SnapshotWriteErrors uint64 `json:"snapshot_write_errors"`
}

// GroupList is one page of the answer of GET /v1/groups, by name. Next
// is the cursor of the next page, empty after the last one (as LeaseList).
type GroupList struct {
	Groups []GroupSummary `json:"groups"`
	Index  uint64         `json:"index"`
	Next   string         `json:"next"`
}

// GroupKeysBody is the body of POST /v1/groups/{name}/keys.
type GroupKeysBody struct {
	Add    []string `json:"add"`
	Remove []string `json:"remove"`
}

// GroupKeySetBody is the body of PUT /v1/groups/{name}/keys: the group's
// whole key set. Keys is required ([] empties the group), so that a body
// that forgot it cannot empty the group by accident.
type GroupKeySetBody struct {
	Keys *[]string `json:"keys"`
}

// MaxPerWorkerBody is the body of PUT /v1/groups/{name}/max-per-worker.
type MaxPerWorkerBody struct {
	MaxPerWorker int `json:"max_per_worker"`
}

// Assignment is the answer of GET /v1/groups/{name}/assignment: key →
// target worker id.
type Assignment struct {
	Group      string            `json:"group"`
	Assignment map[string]string `json:"assignment"`
	// Prepare names the worker that prepares a key of this page before it
	// moves there (a warm hand-off); the key's target is still its holder.
	// With ?worker=, only that worker's.
	Prepare map[string]string `json:"prepare,omitempty"`
	Index   uint64            `json:"index"`
	// Next is the cursor of the next page of the plan (by key); empty
	// after the last one.
	Next string `json:"next"`
	// HiddenKeys is the number of targets this page left out because the
	// token may not read their keys (ACLs on); summed over every page,
	// all of them.
	HiddenKeys int `json:"hidden_keys"`
}

// DrainBody is the body of POST /v1/workers/{id}/drain; without a body, or
// without Draining, the worker is drained.
type DrainBody struct {
	Draining *bool `json:"draining,omitempty"`
}

// DrainResult answers POST /v1/workers/{id}/drain: the worker's drain mark
// as it is now, and warnings, such as a group that the drain leaves
// without a live worker to own its keys (the drain happened anyway).
type DrainResult struct {
	Worker   string   `json:"worker"`
	Draining bool     `json:"draining"`
	Warnings []string `json:"warnings"`
}

// WorkerGroupKeys are the keys of one group that a worker is the target
// of (the balancer's plan) and that it holds (its leases), each sorted.
type WorkerGroupKeys struct {
	Group   string   `json:"group"`
	Targets []string `json:"targets"`
	Holds   []string `json:"holds"`
}

// WorkerInfo is one worker in GET /v1/workers. Status is what gossip says
// ("alive", or "dead" for a member that failed or left in the last 10
// minutes), or "absent" for a worker that gossip does not know but that a
// target, a held lease or a drain mark names. Draining: the worker
// announced it is stopping; Drained: an operator drained it.
type WorkerInfo struct {
	ID       string            `json:"id"`
	Status   string            `json:"status"`
	Addr     string            `json:"addr,omitempty"`
	Groups   []string          `json:"groups"`
	Capacity int               `json:"capacity"`
	Draining bool              `json:"draining"`
	Drained  bool              `json:"drained"`
	Keys     []WorkerGroupKeys `json:"keys"`
}

// WorkerList answers GET /v1/workers.
type WorkerList struct {
	Workers []WorkerInfo `json:"workers"`
	Index   uint64       `json:"index"`
	// Next is the cursor of the next page, "" after the last one.
	Next string `json:"next"`
}

// KeyringBody is the body of POST /v1/operator/keyring: Op is install, use
// or remove; GossipKey the key, base64 (tenure keygen makes one). Force
// skips the check that no alive member would be cut off (a use of a key
// some member lacks, a remove of a key some member encrypts with).
type KeyringBody struct {
	Op        string `json:"op"`
	GossipKey string `json:"gossip_key"`
	Force     bool   `json:"force,omitempty"`
}

// Keyring is the answer of GET and POST /v1/operator/keyring: every gossip
// key that a member alive in the answering server's view announces, and
// Members, the number of those members. After a change, Unreached names the
// members the change could not be sent to.
type Keyring struct {
	Keys      []KeyringKey `json:"keys"`
	Members   int          `json:"members"`
	Unreached []string     `json:"unreached,omitempty"`
}

// KeyringKey is one gossip key: its fingerprint, the key itself (base64)
// when the answering server holds it, how many members hold it and how many
// of them encrypt with it (primary).
type KeyringKey struct {
	Fingerprint string `json:"fingerprint"`
	GossipKey   string `json:"gossip_key,omitempty"`
	Holders     int    `json:"holders"`
	Primary     int    `json:"primary"`
}

// EventList is the answer of GET /v1/events: the events after the index
// asked for, in index order, and Index, the index to ask after next time.
type EventList struct {
	Events []Event `json:"events"`
	Index  uint64  `json:"index"`
}

// Event is one applied change (see client.EventAcquired …). Index is the Raft
// index of the log entry that made it, Term that entry's term; the events
// of one entry share its index and keep their order.
type Event struct {
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
	// Time is when the leader appended the entry that made the change
	// (RFC 3339 in UTC on the wire), by its wall clock: the time of the
	// commit to within the commit's latency. Absent for an entry that
	// carries no time.
	Time time.Time `json:"time,omitzero"`
	Type string    `json:"type"`
	// Key, Holder and Token: the lease (lease events), the key (assigned,
	// control_changed).
	Key    string `json:"key,omitempty"`
	Holder string `json:"holder,omitempty"`
	Token  uint64 `json:"token,omitempty"`
	// Group: group_changed and assigned; Worker: the new target of
	// assigned ("" for none), the worker of drained.
	Group  string `json:"group,omitempty"`
	Worker string `json:"worker,omitempty"`
	// By is the accessor id of the ACL token of the operator who made the
	// change (revoke, groups, controls, drain), or "anonymous"; empty
	// while ACLs are off and for holders' own acquires and releases.
	By string `json:"by,omitempty"`
	// Reason: group_changed: created, updated, deleted, keys,
	// max_per_worker; drained: drained, undrained; ending and revoked:
	// revoked, disabled, prohibited; stuck: stuck, unstuck.
	Reason string `json:"reason,omitempty"`
	// Disabled and Prohibited are the key's new controls
	// (control_changed).
	Disabled   bool     `json:"disabled,omitempty"`
	Prohibited []string `json:"prohibited,omitempty"`
}

// CompactedBody is the body of a 410 compacted answer of GET /v1/events:
// the error body plus the oldest index the server's history still serves.
type CompactedBody struct {
	ErrorBody
	OldestIndex uint64 `json:"oldest_index"`
}

// LeaseRef names one lease to renew. Secret, when set, is the lease's
// secret; otherwise the call's (RenewManyBody.Secret) applies.
type LeaseRef struct {
	Key    string `json:"key"`
	Token  uint64 `json:"token"`
	Secret string `json:"secret,omitempty"`
	// Load, when set, is the key's load as its holder measures it now, in
	// a unit the application chooses (requests per second, bytes, CPU):
	// a number from 0 to MaxLoad. The leader keeps a decayed average of
	// the reports of each key and places a group's keys by it when the
	// group balances by load.
	Load *float64 `json:"load,omitempty"`
}

// GroupSummary is a group in a list.
type GroupSummary struct {
	Name         string `json:"name"`
	Keys         int    `json:"keys"`
	Assigned     int    `json:"assigned"`
	MaxPerWorker int    `json:"max_per_worker"`
	ModifyIndex  uint64 `json:"modify_index"`
}

// ACLCheck is one question of POST /v1/acl/authorize: may the request's
// token use Right on a name? The name is given by exactly one of Key,
// Prefix, Group or Worker for read, write, revoke and groups, and by none
// for the cluster rights operator and acl; a pointer, so that an empty
// prefix ("every name") differs from no prefix. The answer is the one the
// guard of the routes that need Right on that name gives (see ACLRule for
// which routes check which name): revoke on a Key is POST
// /v1/revoke/{key}, groups on a Worker is its drain, groups on a Key its
// key controls, read on a Prefix the list of leases under it. Build
// checks with client.CheckKey, CheckPrefix, CheckGroup, CheckWorker and
// CheckCluster.
type ACLCheck struct {
	Right  string  `json:"right"`
	Key    *string `json:"key,omitempty"`
	Prefix *string `json:"prefix,omitempty"`
	Group  *string `json:"group,omitempty"`
	Worker *string `json:"worker,omitempty"`
}

// ACLAuthorizeBody is the body of POST /v1/acl/authorize: 1 to
// MaxACLChecks checks.
type ACLAuthorizeBody struct {
	Checks []ACLCheck `json:"checks"`
}

// ACLCheckResult is a check with its answer.
type ACLCheckResult struct {
	ACLCheck
	Allowed bool `json:"allowed"`
}

// ACLAuthorizeResults is the answer of POST /v1/acl/authorize: one result
// per check, in the order of the checks.
type ACLAuthorizeResults struct {
	Checks []ACLCheckResult `json:"checks"`
}

// SnapshotContents is what a backup holds (tenure snapshot inspect).
type SnapshotContents struct {
	// Version is the snapshot format's version.
	Version uint16 `json:"version"`
	// Index and Term are the last Raft entry the state includes.
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
	// LastToken is the last fencing token handed out.
	LastToken uint64 `json:"last_token"`
	// Leases counts the key records, Held those held.
	Leases int `json:"leases"`
	Held   int `json:"held"`
	// Groups, ACLTokens and ACLPolicies count the rest of the state.
	Groups      int `json:"groups"`
	ACLTokens   int `json:"acl_tokens"`
	ACLPolicies int `json:"acl_policies"`
	// ClusterID is the cluster the state was taken from.
	ClusterID string `json:"cluster_id"`
	// Signed: the backup carries its cluster's signature (only that
	// cluster can check it; client.RestoreResult.Verified says whether it did).
	Signed bool `json:"signed"`
	// Size is the snapshot's length in bytes, CRC32C its checksum.
	Size   int    `json:"size"`
	CRC32C uint32 `json:"crc32c"`
}

// RestoreResult is the answer to a restore: what the snapshot held, and
// what the cluster holds after it (the cluster's id, a token counter never
// below the one it had, and the leases held at the restore kept).
type RestoreResult struct {
	Snapshot SnapshotContents `json:"snapshot"`
	Restored SnapshotContents `json:"restored"`
	// Verified: the backup is signed by this cluster's backup key. A
	// backup that is not is restored only when asked for
	// (RestoreOptions.Unverified).
	Verified bool `json:"verified"`
	// ACLRestored: the backup's ACL state (tokens, policies, worker
	// registrations) replaced the cluster's; only for a token with the
	// acl right. Otherwise the cluster's ACL state stayed as it was.
	ACLRestored bool `json:"acl_restored"`
	// Replicated: a quorum of servers had the restored state and the
	// leader served again when the answer was sent. When false, the
	// leader had restored it; the others get it as Raft catches them up.
	Replicated bool `json:"replicated"`
}

// Event types (Event.Type): every applied change of a lease, a group, a
// key control or a worker's drain mark. Renewals are not events.
const (
	EventAcquired       = "acquired"
	EventReleased       = "released"
	EventExpired        = "expired"
	EventRevoked        = "revoked"
	EventHandedOff      = "handed_off"
	EventGroupChanged   = "group_changed"
	EventAssigned       = "assigned"
	EventControlChanged = "control_changed"
	EventDrained        = "drained"
	// EventMetadataChanged: the holder re-acquired its lease with other
	// metadata.
	EventMetadataChanged = "metadata_changed"
	// EventForgotten: the record of a key free for longer than the
	// server's retention was deleted.
	EventForgotten = "forgotten"
	// EventStuck: a worker of a group was marked stuck (Reason "stuck") or
	// let back ("unstuck").
	EventStuck = "stuck"
	// EventEnding: an operator revoked, disabled or prohibited a lease
	// without force (Reason says which): the holder's renewals are refused
	// and the key frees (EventRevoked) when its deadline passes.
	EventEnding = "ending"
)

// EventTypes returns every event type, in the order the API documents
// them.
func EventTypes() []string {
	return []string{EventAcquired, EventReleased, EventExpired, EventRevoked, EventHandedOff, EventGroupChanged,
		EventAssigned, EventControlChanged, EventDrained, EventMetadataChanged, EventForgotten, EventStuck, EventEnding}
}
