package wire

import "time"

// ACL rights, as policies name them (see ACLRule).
const (
	RightRead     = "read"     // get, list, blocking queries; groups, controls, assignments
	RightWrite    = "write"    // acquire, renew, release
	RightRevoke   = "revoke"   // force-free a lease
	RightGroups   = "groups"   // create and change groups, key controls, drain
	RightOperator = "operator" // servers, leadership transfer, backups and restores; implies debug and metrics
	RightACL      = "acl"      // tokens and policies; restoring ACL state and unverified backups
	RightMetrics  = "metrics"  // GET /metrics only
	RightDebug    = "debug"    // the debug routes of tenure debug; implies metrics
)

// ACLToken is a token as the API shows it. SecretID is set only in the
// answer that created it (bootstrap, CreateToken): the cluster keeps only
// its hash, and lists never show it.
type ACLToken struct {
	AccessorID   string    `json:"accessor_id"`
	SecretID     string    `json:"secret_id,omitempty"`
	Description  string    `json:"description,omitempty"`
	Policies     []string  `json:"policies"`
	HolderPrefix string    `json:"holder_prefix,omitempty"`
	Management   bool      `json:"management,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	CreateIndex  uint64    `json:"create_index"`
}

// ACLTokenSpec is the body of PUT /v1/acl/token: what a new token gets.
// HolderPrefix binds it: it may acquire, renew and release only as
// holders that start with the prefix.
type ACLTokenSpec struct {
	Description  string   `json:"description,omitempty"`
	Policies     []string `json:"policies,omitempty"`
	HolderPrefix string   `json:"holder_prefix,omitempty"`
	Management   bool     `json:"management,omitempty"`
}

// ACLTokenList is one page of the answer of GET /v1/acl/tokens, by
// accessor id. Next is the cursor of the next page, empty after the last
// one (as wire.LeaseList).
type ACLTokenList struct {
	Tokens []ACLToken `json:"tokens"`
	Index  uint64     `json:"index"`
	Next   string     `json:"next"`
}

// ACLRule grants Rights (RightRead, …) on every name that starts with
// Prefix: lease keys and list prefixes for read, write and revoke; group
// names for read on groups and for groups; keys for controls; worker ids
// for drain. operator and acl are cluster rights: only a rule with an
// empty Prefix may grant them.
type ACLRule struct {
	Prefix string   `json:"prefix"`
	Rights []string `json:"rights"`
}

// ACLPolicy is a named list of rules.
type ACLPolicy struct {
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Rules       []ACLRule `json:"rules"`
	CreateIndex uint64    `json:"create_index"`
	ModifyIndex uint64    `json:"modify_index"`
}

// ACLPolicySpec is the body of PUT /v1/acl/policy/{name}.
type ACLPolicySpec struct {
	Description string    `json:"description,omitempty"`
	Rules       []ACLRule `json:"rules"`
}

// ACLPolicyList is the answer of GET /v1/acl/policies.
type ACLPolicyList struct {
	Policies []ACLPolicy `json:"policies"`
	Index    uint64      `json:"index"`
}

// CheckKey asks for right on a lease key.
func CheckKey(right, key string) ACLCheck { return ACLCheck{Right: right, Key: &key} }

// CheckPrefix asks for right on a prefix, as lists check it ("" is every
// name).
func CheckPrefix(right, prefix string) ACLCheck { return ACLCheck{Right: right, Prefix: &prefix} }

// CheckGroup asks for right on a group name.
func CheckGroup(right, group string) ACLCheck { return ACLCheck{Right: right, Group: &group} }

// CheckWorker asks for right on a worker id.
func CheckWorker(right, id string) ACLCheck { return ACLCheck{Right: right, Worker: &id} }

// CheckCluster asks for a cluster right (RightOperator, RightACL,
// RightMetrics, RightDebug).
func CheckCluster(right string) ACLCheck { return ACLCheck{Right: right} }

// WorkerRegistration is the body of POST /v1/workers/{id}/register.
type WorkerRegistration struct {
	Groups []string `json:"groups"`
}
