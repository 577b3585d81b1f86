package fsm

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/hashicorp/raft"
)

// Code is the outcome of one applied command.
type Code uint8

// Outcomes of Apply.
const (
	// Granted: an Acquire took a free key under a new token.
	Granted Code = iota + 1
	// Kept: an Acquire by the current holder kept its lease and token.
	Kept
	// Held: an Acquire found the key held by another holder.
	Held
	// Freed: a Release, Expire or Revoke freed the key.
	Freed
	// NotHeld: a Release, Expire or Revoke found nothing to free (the key
	// is free, held under another token, or the Expire's term is stale).
	NotHeld
	// NotFound: a Revoke of a key that was never seen, or a group command
	// on a group that does not exist.
	NotFound
	// Done: a command without a lease outcome (LeaderEstablished, Ignored,
	// group commands).
	Done
	// Disabled: an Acquire of a key an operator disabled.
	Disabled
	// Prohibited: an Acquire by a holder an operator prohibited on the key.
	Prohibited
	// Refused: an ACLBootstrap after the first one, or a token whose
	// secret hash another token already has; an EditKeyControl that would
	// prohibit more than MaxProhibited holders.
	Refused
	// NotHolder: a Release whose holder and token never were the key's
	// lease (see releaseOutcome). Lease is the key's current record.
	NotHolder
	// CASFailed: a GroupPutCAS whose expected index is not the group's
	// (or that would create a group that exists). Nothing changed.
	CASFailed
	// Ending: an End (not forced) left the lease held but ending; it also
	// answers an End of a lease that was already ending.
	Ending
	// WrongSecret: a Release named the key's held lease (holder and
	// token) but not its secret. Nothing changed; Lease is the key's
	// current record.
	WrongSecret
)

func (c Code) String() string {
	names := [...]string{"", "granted", "kept", "held", "freed", "not_held", "not_found", "done", "disabled", "prohibited", "refused", "not_holder", "cas_failed", "ending", "wrong_secret"}
	if int(c) < len(names) {
		return names[c]
	}
	return fmt.Sprintf("code(%d)", c)
}

// Result is what applying one command did. Lease is the key's record after
// the command (nil for commands without a key, or a key never seen).
// Ended lists, in key order, the leases that an End or a key control
// ended by this command: their records after it, held and ending, or
// freed when forced.
type Result struct {
	Code  Code
	Lease *Lease
	// MetadataChanged: a Kept acquisition replaced the lease's metadata
	// with different metadata (see Machine.keep).
	MetadataChanged bool
	// WrongSecret: a Held answer to an Acquire by the lease's own holder
	// whose secret is not the lease's.
	WrongSecret bool
	Ended       []*Lease
}

// Machine is the lease state machine. It implements raft.FSM.
//
// Raft calls Apply, Snapshot and Restore from its FSM goroutine, one at a
// time; the read methods (Get, List, Index …) may run concurrently with them
// from any goroutine.
type Machine struct {
	mu     sync.RWMutex
	leases map[string]*Lease
	// sorted holds the records of leases ordered by key, for ListPage.
	sorted *keyIndex
	// lastToken is the last fencing token handed out; the next grant takes
	// lastToken+1. It only grows, across snapshots and restores.
	lastToken uint64
	// establishedTerm is the term of the last LeaderEstablished applied.
	establishedTerm uint64
	// appliedIndex and appliedTerm are those of the last applied entry.
	appliedIndex, appliedTerm uint64
	// appliedAt is the entry's AppendedAt (the leader's wall clock when it
	// appended the entry, part of the entry as every server stores it),
	// Unix nanoseconds; 0 when the entry carries none.
	appliedAt int64
	// leaseIndex is the highest ModifyIndex of any lease.
	leaseIndex uint64
	// groups, controls (by key) and drained (by worker id) are the
	// placement state; groupIndex is the last index that changed it.
	groups     map[string]*Group
	controls   map[string]KeyControl
	drained    map[string]bool
	groupIndex uint64
	// acl is the ACL state: tokens (by hash only), policies, worker
	// registrations.
	acl aclState
	// clusterID names the cluster (ClusterID); "" until one is applied.
	clusterID string
	// backupKey signs backups (BackupKey); nil until one is applied.
	backupKey []byte
	// handover holds the leases of the last Handover, by key, while no
	// leader has established itself after it; nil otherwise. Snapshots
	// leave it out.
	handover map[string]HandedLease
	// changed is closed, and replaced, whenever a lease or the placement
	// state changes.
	changed chan struct{}
	// history holds the recent events; pending, freed and by belong to
	// the entry being applied: its events so far, the keys it freed, and
	// the operator of the By being applied.
	history history
	pending []Event
	freed   map[string]bool
	by      string
}

// New returns an empty Machine.
func New(opts ...Option) *Machine {
	m := &Machine{
		leases:   make(map[string]*Lease),
		sorted:   newKeyIndex(),
		groups:   make(map[string]*Group),
		controls: make(map[string]KeyControl),
		drained:  make(map[string]bool),
		acl:      newACLState(),
		changed:  make(chan struct{}),
		history:  history{capacity: defaultHistory},
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

var _ raft.FSM = (*Machine)(nil)

// Apply applies one committed log entry. It returns a Result for a single
// command (Code Done for an ignorable unknown command) and a []Result for a
// Batch.
// It panics on an entry it cannot decode: a replica that skipped it would
// silently diverge from its peers. Servers call ApplyLog instead, which
// returns that error, so that they can stop cleanly.
func (m *Machine) Apply(l *raft.Log) interface{} {
	out, err := m.ApplyLog(l)
	if err != nil {
		panic("fsm: " + err.Error())
	}
	return out
}

// applyCommand applies the decoded command of entry l.
func (m *Machine) applyCommand(l *raft.Log, cmd Command) interface{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.appliedIndex, m.appliedTerm = l.Index, l.Term
	m.appliedAt = 0
	if !l.AppendedAt.IsZero() {
		m.appliedAt = l.AppendedAt.UnixNano()
	}
	m.pending, m.freed = m.pending[:0], nil
	before, beforeGroups, beforeACL := m.leaseIndex, m.groupIndex, m.acl.index
	var out interface{}
	if b, ok := cmd.(Batch); ok {
		results := make([]Result, len(b.Commands))
		for i, c := range b.Commands {
			results[i] = m.apply(l.Index, c)
		}
		out = results
	} else {
		out = m.apply(l.Index, cmd)
	}
	if len(m.pending) > 0 {
		m.history.push(m.pending)
		clear(m.pending) // the history has copies; keep no references
	}
	if m.leaseIndex != before || m.groupIndex != beforeGroups || m.acl.index != beforeACL || len(m.pending) > 0 {
		close(m.changed)
		m.changed = make(chan struct{})
	}
	return out
}

// apply runs one command under m.mu.
func (m *Machine) apply(index uint64, cmd Command) Result {
	switch c := cmd.(type) {
	case Acquire:
		return m.acquire(index, c)
	case Release:
		cur := m.leases[c.Key]
		if code := releaseOutcome(cur, c); code != Freed {
			return Result{Code: code, Lease: cur}
		}
		return m.free(index, cur, ReasonReleased)
	case Expire:
		cur := m.leases[c.Key]
		if cur == nil || !cur.Held || cur.Token != c.Token || c.Term < m.establishedTerm {
			return Result{Code: NotHeld, Lease: cur}
		}
		if cur.Ending != ReasonNone {
			return m.free(index, cur, cur.Ending)
		}
		return m.free(index, cur, ReasonExpired)
	case Revoke:
		cur := m.leases[c.Key]
		if cur == nil {
			return Result{Code: NotFound}
		}
		if !cur.Held {
			return Result{Code: NotHeld, Lease: cur}
		}
		return m.free(index, cur, ReasonRevoked)
	case End:
		return m.end(index, c)
	case LeaderEstablished:
		m.establishedTerm = max(m.establishedTerm, c.Term)
		// A leader has served since any earlier hand-over: its remaining
		// times no longer hold.
		m.handover = nil
		return Result{Code: Done}
	case Handover:
		return m.applyHandover(c)
	case Ignored:
		return Result{Code: Done}
	case By:
		m.by = c.Accessor
		r := m.apply(index, c.Cmd)
		m.by = ""
		return r
	case GroupPut, GroupDelete, GroupKeys, GroupSetKeys, SetKeyControl, WorkerDrain, Assign, GroupMax:
		return m.applyGroup(index, cmd)
	case GroupPutCAS:
		return m.groupPutCAS(index, c)
	case EditKeyControl:
		return m.editControl(index, c)
	case Forget:
		return m.forget(index, c)
	case GroupDefine:
		m.defineGroup(index, c)
		return Result{Code: Done}
	case GroupBalance:
		return m.setBalance(index, c)
	case Prepared:
		return m.applyPrepared(index, c)
	case MarkStuck:
		return m.changeGroup(index, c.Group, func(cur, next *Group) { m.setStuck(cur, next, sortedSet(c.Workers)) })
	case ACLBootstrap, ACLTokenSet, ACLTokenDelete, ACLPolicySet, ACLPolicyDelete, WorkerRegister:
		return m.applyACL(index, cmd)
	case ClusterID:
		return setOnce(c.ID != "", m.clusterID == "", m.clusterID == c.ID, func() { m.clusterID = c.ID })
	case BackupKey:
		return setOnce(len(c.Key) == BackupKeyLen, m.backupKey == nil, bytes.Equal(m.backupKey, c.Key),
			func() { m.backupKey = append([]byte(nil), c.Key...) })
	}
	// Decode never yields anything else; a nested Batch is rejected there.
	panic(fmt.Sprintf("fsm: no handler for command type %d", cmd.Type()))
}

func (m *Machine) acquire(index uint64, c Acquire) Result {
	cur := m.leases[c.Key]
	if ctl, ok := m.controls[c.Key]; ok {
		if ctl.Disabled {
			return Result{Code: Disabled, Lease: cur}
		}
		if ctl.Prohibits(c.Holder) {
			return Result{Code: Prohibited, Lease: cur}
		}
	}
	if cur != nil && cur.Held {
		if cur.Holder != c.Holder || cur.Ending != ReasonNone {
			// An ending lease is never kept, not even by its holder.
			return Result{Code: Held, Lease: cur}
		}
		if !SecretMatches(cur.SecretHash, c.SecretHash) {
			// The holder's name is no credential: without the lease's
			// secret the caller is someone else.
			return Result{Code: Held, Lease: cur, WrongSecret: true}
		}
		return m.keep(index, cur, c)
	}
	m.lastToken++
	next := &Lease{
		Key:         c.Key,
		Holder:      c.Holder,
		Token:       m.lastToken,
		TTL:         c.TTL,
		Held:        true,
		Metadata:    c.Metadata,
		AcquiredAt:  c.Time,
		CreateIndex: index,
		ModifyIndex: index,
		SecretHash:  c.SecretHash,
	}
	if cur != nil {
		next.CreateIndex = cur.CreateIndex
	}
	m.store(next)
	m.emit(Event{Type: EventAcquired, Key: c.Key, Holder: c.Holder, Token: next.Token})
	return Result{Code: Granted, Lease: next}
}

func (m *Machine) free(index uint64, cur *Lease, why Reason) Result {
	next := *cur
	next.Held = false
	next.Reason = why
	next.Ending = ReasonNone
	next.ModifyIndex = index
	next.SecretHash = "" // nobody acts on a free lease as its holder
	m.store(&next)
	e := Event{Type: freeEvents[why], Key: cur.Key, Holder: cur.Holder, Token: cur.Token}
	if e.Type == EventRevoked {
		e.Reason = why.String() // revoked, disabled or prohibited
	}
	m.emit(e)
	return Result{Code: Freed, Lease: &next}
}

func (m *Machine) store(l *Lease) {
	m.leases[l.Key] = l
	m.sorted.put(l)
	m.leaseIndex = max(m.leaseIndex, l.ModifyIndex)
}

// rlocked returns what f reads under m's read lock: the body of the read
// methods that return one part of the state.
func rlocked[T any](m *Machine, f func() T) T {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return f()
}

// byKeyLocked returns, read under m's read lock, the values of the map
// that f picks, in the order of their keys, and the index f picks with it.
func byKeyLocked[V any](m *Machine, f func() (map[string]V, uint64)) ([]V, uint64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	values, index := f()
	return valuesByKey(values), index
}

// Get returns the record of key, or nil if the key was never seen.
func (m *Machine) Get(key string) *Lease { return rlocked(m, func() *Lease { return m.leases[key] }) }

// Held returns every held lease, ordered by key. The leader's lessor
// promotes them when it gains leadership.
func (m *Machine) Held() []*Lease {
	leases, _ := m.List(Filter{State: "held"})
	return leases
}

// Indexes reports the last applied Raft index and term, and the highest
// index that changed a lease.
func (m *Machine) Indexes() (applied, term, lease uint64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.appliedIndex, m.appliedTerm, m.leaseIndex
}

// LastToken is the last fencing token handed out.
func (m *Machine) LastToken() uint64 { return rlocked(m, func() uint64 { return m.lastToken }) }

// Changed returns a channel that is closed the next time a lease, the
// placement state or the ACL state changes, an event is recorded, or the
// state is restored. Blocking queries and event watchers wait on it.
func (m *Machine) Changed() <-chan struct{} {
	return rlocked(m, func() <-chan struct{} { return m.changed })
}

// Snapshot captures the state for Raft. It runs on the FSM goroutine; the
// returned snapshot's Persist runs concurrently with later Applies, which is
// safe because stored leases are never modified.
func (m *Machine) Snapshot() (raft.FSMSnapshot, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s := &snapshot{
		state: state{
			lastToken:       m.lastToken,
			establishedTerm: m.establishedTerm,
			leaseIndex:      m.leaseIndex,
			leases:          make([]*Lease, 0, len(m.leases)),
			groupIndex:      m.groupIndex,
			groups:          slices.Collect(maps.Values(m.groups)),
			controls:        maps.Clone(m.controls),
			drained:         slices.Collect(maps.Keys(m.drained)),
			acl:             m.acl.snapshot(),
			clusterID:       m.clusterID,
			backupKey:       m.backupKey,
		},
		index: m.appliedIndex,
		term:  m.appliedTerm,
	}
	// In key order, as the snapshot stores them: the encoder's sort then
	// finds them sorted, in linear time.
	m.sorted.ascend("", func(l *Lease) bool {
		s.state.leases = append(s.state.leases, l)
		return true
	})
	return s, nil
}

// Restore replaces the state with a snapshot that Snapshot wrote. On error
// the state is left as it was.
func (m *Machine) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	// The state restored is most often about the size of this one (a
	// follower catching up, a backup of this cluster put back).
	m.mu.RLock()
	hint := 0
	for _, l := range m.leases {
		hint += l.encodedSize()
	}
	m.mu.RUnlock()
	st, index, term, err := readSnapshot(rc, hint)
	if err != nil {
		return err
	}
	leases := make(map[string]*Lease, len(st.leases))
	for _, l := range st.leases {
		leases[l.Key] = l
	}
	sorted := newKeyIndex(st.leases...)
	m.mu.Lock()
	defer m.mu.Unlock()
	// A snapshot never lowers the token counter: tokens are never reused.
	if st.lastToken < m.lastToken {
		return fmt.Errorf("snapshot token counter %d is below the current %d", st.lastToken, m.lastToken)
	}
	m.leases, m.sorted = leases, sorted
	m.groups = make(map[string]*Group, len(st.groups))
	for _, g := range st.groups {
		m.groups[g.Name] = g
	}
	m.controls = st.controls
	if m.controls == nil {
		m.controls = make(map[string]KeyControl)
	}
	m.drained = make(map[string]bool, len(st.drained))
	for _, w := range st.drained {
		m.drained[w] = true
	}
	m.groupIndex = st.groupIndex
	m.acl = st.acl
	m.clusterID = st.clusterID
	m.backupKey = st.backupKey
	m.lastToken = st.lastToken
	m.establishedTerm = st.establishedTerm
	m.leaseIndex = st.leaseIndex
	m.handover = nil
	m.appliedIndex, m.appliedTerm = index, term
	// The log before the snapshot is gone: the history starts after it.
	m.history.reset(index)
	close(m.changed)
	m.changed = make(chan struct{})
	return nil
}

// Counts returns the number of held and free keys.
func (m *Machine) Counts() (held, free int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, l := range m.leases {
		if l.Held {
			held++
		}
	}
	return held, len(m.leases) - held
}
