package fsm

import (
	"fmt"
	"maps"
	"strings"
)

// Right is a set of ACL rights, one bit each. The bit values are part of
// the command and snapshot encoding: never renumber them.
type Right uint8

// The rights a policy rule can grant.
const (
	// RightRead: read leases, lists, blocking queries, groups, controls.
	RightRead Right = 1 << iota
	// RightWrite: acquire, renew and release leases.
	RightWrite
	// RightRevoke: force-free a lease.
	RightRevoke
	// RightGroups: create, change and delete groups; key controls; drain.
	RightGroups
	// RightOperator: servers, leadership transfer, backups and restores
	// (restoring ACL state needs RightACL too), keyring; it implies
	// RightDebug and RightMetrics (Implied).
	RightOperator
	// RightACL: tokens and policies; restoring a backup's ACL state, and
	// restoring a backup this cluster did not sign.
	RightACL
	// RightMetrics: scrape GET /metrics, and nothing else.
	RightMetrics
	// RightDebug: the debug routes (profiles, recent log lines) that
	// `tenure debug` reads; it implies RightMetrics.
	RightDebug

	// RightAll is every right; a management token has it everywhere.
	RightAll = RightRead | RightWrite | RightRevoke | RightGroups | RightOperator | RightACL | RightMetrics | RightDebug
)

// rightNames are the rights in bit order, as the API spells them.
var rightNames = [...]string{"read", "write", "revoke", "groups", "operator", "acl", "metrics", "debug"}

// ClusterRights are granted only by rules with an empty prefix: they are
// about the cluster, not about keys.
const ClusterRights = RightOperator | RightACL | RightMetrics | RightDebug

// Implied is r with the rights it implies: operator implies debug and
// metrics (policies written before those rights existed gave operator to
// scrapers and to `tenure debug`, and an operator, who may take a backup
// of the whole state, learns nothing more from them); debug implies
// metrics (a debug archive holds the metrics).
func (r Right) Implied() Right {
	if r&RightOperator != 0 {
		r |= RightDebug
	}
	if r&RightDebug != 0 {
		r |= RightMetrics
	}
	return r
}

// String is the comma-separated names of the rights in r, in bit order.
func (r Right) String() string { return strings.Join(r.Names(), ",") }

// Names returns the names of the rights in r, in bit order.
func (r Right) Names() []string {
	names := []string{}
	for i, n := range rightNames {
		if r&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return names
}

// ParseRight returns the right called name ("read", "write", …).
func ParseRight(name string) (Right, error) {
	for i, n := range rightNames {
		if n == name {
			return 1 << i, nil
		}
	}
	return 0, fmt.Errorf("unknown right %q, want one of %s", name, strings.Join(rightNames[:], ", "))
}

// ACLRule grants Rights on every name that starts with Prefix. An empty
// Prefix matches every name.
type ACLRule struct {
	Prefix string
	Rights Right
}

// ACLPolicy is a named list of rules. Like Lease, a stored policy is never
// modified: every change stores a new value.
type ACLPolicy struct {
	Name        string
	Description string
	Rules       []ACLRule
	// CreateIndex and ModifyIndex are the Raft indexes that created and
	// last changed the policy.
	CreateIndex, ModifyIndex uint64
}

// ACLToken is a token as the cluster stores it: never its secret, only the
// secret's hash. A stored token is never modified.
type ACLToken struct {
	// AccessorID names the token in lists and logs; it is not a secret.
	AccessorID string
	// SecretHash is the hex SHA-256 of the secret. The server computes it;
	// the secret itself never enters the log.
	SecretHash  string
	Description string
	// Policies are policy names (sorted, unique). A name without a policy
	// grants nothing.
	Policies []string
	// Management tokens have every right on every name.
	Management bool
	// HolderPrefix, when not empty, binds the token: it may acquire, renew
	// and release only as holders that start with it.
	HolderPrefix string
	// CreateTime is the proposing leader's wall clock in Unix nanoseconds,
	// for display only.
	CreateTime  int64
	CreateIndex uint64
}

// WorkerRegistration records that a token (by accessor id) vouched for a
// worker id serving some groups. With ACLs on, the balancer plans keys
// only to registered workers whose token still allows them.
type WorkerRegistration struct {
	Worker   string
	Groups   []string // sorted, unique
	Accessor string
	Index    uint64
}

// ACLBootstrap stores the first management token. It is refused (code
// Refused) once the ACL system has been bootstrapped, even if that token
// was deleted since.
type ACLBootstrap struct {
	Token ACLToken
}

// ACLTokenSet stores a token under its accessor id, replacing one with the
// same id. It is refused when another token has the same secret hash.
type ACLTokenSet struct {
	Token ACLToken
}

// ACLTokenDelete removes a token.
type ACLTokenDelete struct {
	AccessorID string
}

// ACLPolicySet creates or replaces a policy.
type ACLPolicySet struct {
	Policy ACLPolicy
}

// ACLPolicyDelete removes a policy; tokens that name it lose its rules.
type ACLPolicyDelete struct {
	Name string
}

// WorkerRegister records (or replaces) the registration of a worker.
type WorkerRegister struct {
	Worker   string
	Groups   []string
	Accessor string
}

func (ACLBootstrap) Type() Type    { return TypeACLBootstrap }
func (ACLTokenSet) Type() Type     { return TypeACLTokenSet }
func (ACLTokenDelete) Type() Type  { return TypeACLTokenDelete }
func (ACLPolicySet) Type() Type    { return TypeACLPolicySet }
func (ACLPolicyDelete) Type() Type { return TypeACLPolicyDelete }
func (WorkerRegister) Type() Type  { return TypeWorkerRegister }

// encodeToken writes the fields a command carries (not CreateIndex, which
// the apply sets).
func encodeToken(e *encoder, t ACLToken) {
	e.string(t.AccessorID)
	e.string(t.SecretHash)
	e.string(t.Description)
	e.strings(t.Policies)
	e.bool(t.Management)
	e.string(t.HolderPrefix)
	e.varint(t.CreateTime)
}

func decodeToken(d *decoder) ACLToken {
	return ACLToken{AccessorID: d.string(), SecretHash: d.string(), Description: d.string(), Policies: d.strings(),
		Management: d.bool(), HolderPrefix: d.string(), CreateTime: d.varint()}
}

func encodeRules(e *encoder, rules []ACLRule) {
	e.uvarint(uint64(len(rules)))
	for _, r := range rules {
		e.string(r.Prefix)
		e.uvarint(uint64(r.Rights))
	}
}

func decodeRules(d *decoder) []ACLRule {
	n := d.listLen("%d rules") // every rule takes at least two bytes
	if n == 0 {
		return nil
	}
	rules := make([]ACLRule, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		p := d.string()
		r := d.uvarint()
		if r > uint64(RightAll) {
			d.fail(fmt.Errorf("rights %#x outside %#x", r, RightAll))
		}
		rules = append(rules, ACLRule{Prefix: p, Rights: Right(r)})
	}
	return rules
}

func (c ACLBootstrap) encode(e *encoder) { encodeToken(e, c.Token) }
func (c ACLTokenSet) encode(e *encoder)  { encodeToken(e, c.Token) }

func (c ACLTokenDelete) encode(e *encoder) { e.string(c.AccessorID) }

func (c ACLPolicySet) encode(e *encoder) {
	e.string(c.Policy.Name)
	e.string(c.Policy.Description)
	encodeRules(e, c.Policy.Rules)
}

func (c ACLPolicyDelete) encode(e *encoder) { e.string(c.Name) }

func (c WorkerRegister) encode(e *encoder) {
	e.string(c.Worker)
	e.strings(c.Groups)
	e.string(c.Accessor)
}

// aclState is the replicated ACL state of a Machine, and of a snapshot.
type aclState struct {
	bootstrapped bool
	// index is the last Raft index that changed a token or a policy.
	index    uint64
	tokens   map[string]*ACLToken  // by accessor id
	byHash   map[string]string     // secret hash → accessor id
	policies map[string]*ACLPolicy // by name
	workers  map[string]*WorkerRegistration
}

func newACLState() aclState {
	return aclState{tokens: map[string]*ACLToken{}, byHash: map[string]string{},
		policies: map[string]*ACLPolicy{}, workers: map[string]*WorkerRegistration{}}
}

// applyACL runs an ACL or registration command under m.mu.
func (m *Machine) applyACL(index uint64, cmd Command) Result {
	a := &m.acl
	switch c := cmd.(type) {
	case ACLBootstrap:
		if a.bootstrapped || !m.storeToken(index, c.Token) {
			return Result{Code: Refused}
		}
		a.bootstrapped = true
	case ACLTokenSet:
		if !m.storeToken(index, c.Token) {
			return Result{Code: Refused}
		}
	case ACLTokenDelete:
		cur := a.tokens[c.AccessorID]
		if cur == nil {
			return Result{Code: NotFound}
		}
		delete(a.tokens, c.AccessorID)
		delete(a.byHash, cur.SecretHash)
		a.index = index
	case ACLPolicySet:
		next := &ACLPolicy{Name: c.Policy.Name, Description: c.Policy.Description,
			Rules: append([]ACLRule(nil), c.Policy.Rules...), CreateIndex: index, ModifyIndex: index}
		if cur := a.policies[c.Policy.Name]; cur != nil {
			next.CreateIndex = cur.CreateIndex
		}
		a.policies[next.Name] = next
		a.index = index
	case ACLPolicyDelete:
		if a.policies[c.Name] == nil {
			return Result{Code: NotFound}
		}
		delete(a.policies, c.Name)
		a.index = index
	case WorkerRegister:
		a.workers[c.Worker] = &WorkerRegistration{Worker: c.Worker, Groups: sortedSet(c.Groups), Accessor: c.Accessor, Index: index}
		// Registrations are placement state: the balancer wakes on them.
		m.groupIndex = index
	}
	return Result{Code: Done}
}

// storeToken stores t at index unless another token has its secret hash.
func (m *Machine) storeToken(index uint64, t ACLToken) bool {
	a := &m.acl
	if other, ok := a.byHash[t.SecretHash]; ok && other != t.AccessorID {
		return false
	}
	if cur := a.tokens[t.AccessorID]; cur != nil {
		delete(a.byHash, cur.SecretHash)
	}
	next := t
	next.Policies = sortedSet(t.Policies)
	next.CreateIndex = index
	a.tokens[t.AccessorID] = &next
	a.byHash[t.SecretHash] = t.AccessorID
	a.index = index
	return true
}

// ACLIndex is the last Raft index that changed a token or a policy.
func (m *Machine) ACLIndex() uint64 { return rlocked(m, func() uint64 { return m.acl.index }) }

// ACLTokenByHash returns the token whose secret has the given hash, or nil.
func (m *Machine) ACLTokenByHash(hash string) *ACLToken {
	return rlocked(m, func() *ACLToken { return m.acl.tokens[m.acl.byHash[hash]] })
}

// ACLToken returns the token with the given accessor id, or nil.
func (m *Machine) ACLToken(accessor string) *ACLToken {
	return rlocked(m, func() *ACLToken { return m.acl.tokens[accessor] })
}

// ACLTokens returns every token, ordered by accessor id, and the ACL index.
func (m *Machine) ACLTokens() ([]*ACLToken, uint64) {
	return byKeyLocked(m, func() (map[string]*ACLToken, uint64) { return m.acl.tokens, m.acl.index })
}

// ACLPolicy returns the policy called name, or nil.
func (m *Machine) ACLPolicy(name string) *ACLPolicy {
	return rlocked(m, func() *ACLPolicy { return m.acl.policies[name] })
}

// ACLPolicies returns every policy, ordered by name, and the ACL index.
func (m *Machine) ACLPolicies() ([]*ACLPolicy, uint64) {
	return byKeyLocked(m, func() (map[string]*ACLPolicy, uint64) { return m.acl.policies, m.acl.index })
}

// WorkerRegistration returns the registration of worker, or nil.
func (m *Machine) WorkerRegistration(worker string) *WorkerRegistration {
	return rlocked(m, func() *WorkerRegistration { return m.acl.workers[worker] })
}

// snapshot copies the ACL state for a snapshot; stored values are never
// modified, so sharing the pointers is safe.
func (a *aclState) snapshot() aclState {
	return aclState{bootstrapped: a.bootstrapped, index: a.index, tokens: maps.Clone(a.tokens), byHash: maps.Clone(a.byHash),
		policies: maps.Clone(a.policies), workers: maps.Clone(a.workers)}
}

// encodeACL writes the ACL part of a snapshot (format version 3).
func encodeACL(e *encoder, a aclState) {
	e.bool(a.bootstrapped)
	e.uvarint(a.index)
	// Each entry is the command that stores it, then what its apply set.
	encodeSorted(e, a.policies, func(_ string, p *ACLPolicy) {
		ACLPolicySet{Policy: *p}.encode(e)
		e.uvarint(p.CreateIndex)
		e.uvarint(p.ModifyIndex)
	})
	encodeSorted(e, a.tokens, func(_ string, t *ACLToken) {
		encodeToken(e, *t)
		e.uvarint(t.CreateIndex)
	})
	encodeSorted(e, a.workers, func(_ string, r *WorkerRegistration) {
		WorkerRegister{Worker: r.Worker, Groups: r.Groups, Accessor: r.Accessor}.encode(e)
		e.uvarint(r.Index)
	})
}

// decodeACL reads what encodeACL wrote, checking order and uniqueness.
func decodeACL(d *decoder) aclState {
	a := newACLState()
	a.bootstrapped = d.bool()
	a.index = d.uvarint()
	n := d.count("policies")
	var prev string
	for i := uint64(0); i < n && d.err == nil; i++ {
		p := &ACLPolicy{Name: d.string(), Description: d.string(), Rules: decodeRules(d), CreateIndex: d.uvarint(), ModifyIndex: d.uvarint()}
		if i > 0 && p.Name <= prev {
			d.fail(fmt.Errorf("policy %q out of order", p.Name))
		}
		prev = p.Name
		a.policies[p.Name] = p
	}
	n = d.count("tokens")
	for i := uint64(0); i < n && d.err == nil; i++ {
		t := decodeToken(d)
		t.CreateIndex = d.uvarint()
		if i > 0 && t.AccessorID <= prev {
			d.fail(fmt.Errorf("token %q out of order", t.AccessorID))
		}
		if _, dup := a.byHash[t.SecretHash]; dup {
			d.fail(fmt.Errorf("token %q repeats a secret hash", t.AccessorID))
		}
		if !strictlySorted(t.Policies) {
			d.fail(fmt.Errorf("policies of token %q out of order", t.AccessorID))
		}
		prev = t.AccessorID
		a.tokens[t.AccessorID] = &t
		a.byHash[t.SecretHash] = t.AccessorID
	}
	n = d.count("worker registrations")
	for i := uint64(0); i < n && d.err == nil; i++ {
		r := &WorkerRegistration{Worker: d.string(), Groups: d.strings(), Accessor: d.string(), Index: d.uvarint()}
		if i > 0 && r.Worker <= prev {
			d.fail(fmt.Errorf("worker registration %q out of order", r.Worker))
		}
		if !strictlySorted(r.Groups) {
			d.fail(fmt.Errorf("groups of worker %q out of order", r.Worker))
		}
		prev = r.Worker
		a.workers[r.Worker] = r
	}
	return a
}
