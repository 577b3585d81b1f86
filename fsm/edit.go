package fsm

import "maps"

// MaxProhibited bounds the prohibited holders of one key.
const MaxProhibited = 1024

// GroupPutCAS creates or replaces a group like GroupDefine, but only if
// the group's ModifyIndex is Index, and only creates it (when it does not
// exist) if Index is 0. Otherwise it changes nothing (CASFailed).
type GroupPutCAS struct {
	Define GroupDefine
	Index  uint64
}

// EditKeyControl changes the controls of a key on top of what they are
// when it applies: SetDisabled sets Disabled; the holders of Prohibit are
// added to the prohibited ones, then those of Allow removed. Like
// SetKeyControl, when the new controls refuse the key's holder its lease
// ends: at its deadline, or at once with Force.
type EditKeyControl struct {
	Key         string
	SetDisabled bool
	Disabled    bool
	Prohibit    []string
	Allow       []string
	Force       bool
}

// Forget deletes the record of Key if it is still free under Token and the
// key belongs to no group; the key's controls stay. Only the leader
// proposes it, for keys that have been free for longer than its
// retention. The token counter is not touched: a later grant of the key
// gets a larger token than any before.
type Forget struct {
	Key   string
	Token uint64
}

func (GroupPutCAS) Type() Type    { return TypeGroupPutCAS }
func (EditKeyControl) Type() Type { return TypeEditKeyControl }
func (Forget) Type() Type         { return TypeForget }

func (c GroupPutCAS) encode(e *encoder) {
	c.Define.encode(e)
	e.uvarint(c.Index)
}

func (c EditKeyControl) encode(e *encoder) {
	e.string(c.Key)
	e.bool(c.SetDisabled)
	e.bool(c.Disabled)
	e.strings(c.Prohibit)
	e.strings(c.Allow)
	e.bool(c.Force)
}

func (c Forget) encode(e *encoder) {
	e.string(c.Key)
	e.uvarint(c.Token)
}

// keep is an Acquire by the holder of cur, a held lease: the lease and its
// token stay; the TTL becomes the acquisition's, and metadata, when the
// acquisition carries some, replaces the lease's (Result.MetadataChanged
// when it differs). This is the one place where the metadata of a held
// lease changes, so a metadata_changed event belongs here. m.mu is held.
func (m *Machine) keep(index uint64, cur *Lease, c Acquire) Result {
	next := *cur
	next.TTL = c.TTL
	changed := false
	if c.Metadata != nil {
		changed = !maps.Equal(cur.Metadata, c.Metadata)
		next.Metadata = c.Metadata
	}
	next.ModifyIndex = index
	m.store(&next)
	if changed {
		m.emit(Event{Type: EventMetadataChanged, Key: next.Key, Holder: next.Holder, Token: next.Token})
	}
	return Result{Code: Kept, Lease: &next, MetadataChanged: changed}
}

// releaseOutcome decides a Release against cur, the key's record: Freed
// when it names the held lease; NotHeld when the caller's lease is gone
// already (the key was never seen or forgotten; the lease was freed; or
// the key has a newer token, which the caller's may have preceded);
// NotHolder when the caller's holder and token never were the key's
// lease: a token above the key's current one was never handed out for
// it, and the current token belongs to another holder; WrongSecret when
// it names the held lease without its secret.
func releaseOutcome(cur *Lease, c Release) Code {
	switch {
	case cur == nil || c.Token < cur.Token:
		return NotHeld
	case c.Token > cur.Token || cur.Holder != c.Holder:
		return NotHolder
	case !cur.Held:
		return NotHeld
	case !SecretMatches(cur.SecretHash, c.SecretHash):
		return WrongSecret
	}
	return Freed
}

// groupPutCAS applies c. m.mu is held.
func (m *Machine) groupPutCAS(index uint64, c GroupPutCAS) Result {
	cur := m.groups[c.Define.Name]
	if (cur == nil && c.Index != 0) || (cur != nil && cur.ModifyIndex != c.Index) {
		return Result{Code: CASFailed}
	}
	m.defineGroup(index, c.Define)
	return Result{Code: Done}
}

// editControl applies c on top of the key's current controls. m.mu is
// held.
func (m *Machine) editControl(index uint64, c EditKeyControl) Result {
	cur := m.controls[c.Key]
	next := KeyControl{Disabled: cur.Disabled}
	if c.SetDisabled {
		next.Disabled = c.Disabled
	}
	allow := make(map[string]bool, len(c.Allow))
	for _, h := range c.Allow {
		allow[h] = true
	}
	for _, h := range sortedSet(append(append([]string(nil), cur.Prohibited...), c.Prohibit...)) {
		if !allow[h] {
			next.Prohibited = append(next.Prohibited, h)
		}
	}
	if len(next.Prohibited) > MaxProhibited {
		return Result{Code: Refused}
	}
	m.setControl(index, c.Key, next)
	if l := m.endByControl(index, c.Key, c.Force); l != nil {
		return Result{Code: Done, Ended: []*Lease{l}}
	}
	return Result{Code: Done}
}

// setControl stores ctl, whose Prohibited is sorted and unique, as the
// controls of key: every command that changes a key's controls goes
// through it. m.mu is held.
func (m *Machine) setControl(index uint64, key string, ctl KeyControl) {
	if ctl.empty() {
		delete(m.controls, key)
	} else {
		m.controls[key] = ctl
	}
	m.groupIndex = index
	m.emit(Event{Type: EventControlChanged, Key: key, Disabled: ctl.Disabled, Prohibited: ctl.Prohibited})
}

// forget applies c. m.mu is held.
func (m *Machine) forget(index uint64, c Forget) Result {
	cur := m.leases[c.Key]
	if cur == nil {
		return Result{Code: NotFound}
	}
	if cur.Held || cur.Token != c.Token || m.inGroup(c.Key) {
		return Result{Code: NotHeld, Lease: cur}
	}
	delete(m.leases, c.Key)
	m.sorted.remove(c.Key)
	m.leaseIndex = index
	m.emit(Event{Type: EventForgotten, Key: cur.Key, Holder: cur.Holder, Token: cur.Token})
	return Result{Code: Freed}
}
