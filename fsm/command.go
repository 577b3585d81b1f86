package fsm

import (
	"errors"
	"fmt"
	"time"
)

// Type is the first byte of every encoded command. Values are never reused:
// a retired command keeps its number forever.
type Type uint8

// IgnorableFlag marks a command type that an older server may skip when it
// does not know it. Commands without the flag make an older server panic
// rather than silently diverge from its peers.
const IgnorableFlag Type = 0x80

// Command types, every one in this table so that no value is given twice.
// Values are never reused: a retired command keeps its number forever.
const (
	// Lease commands.
	TypeAcquire           Type = 1
	TypeRelease           Type = 2
	TypeExpire            Type = 3
	TypeRevoke            Type = 4
	TypeLeaderEstablished Type = 5
	TypeBatch             Type = 6

	// Group, key-control and worker commands (group.go).
	TypeGroupPut    Type = 7
	TypeGroupDelete Type = 8
	TypeGroupKeys   Type = 9
	TypeKeyControl  Type = 10
	TypeWorkerDrain Type = 11
	TypeAssign      Type = 12
	TypeGroupMax    Type = 13

	// ACL commands and the worker registration (acl.go). None carries
	// IgnorableFlag: a server that skipped one would authorize differently
	// from its peers.
	TypeACLBootstrap    Type = 14
	TypeACLTokenSet     Type = 15
	TypeACLTokenDelete  Type = 16
	TypeACLPolicySet    Type = 17
	TypeACLPolicyDelete Type = 18
	TypeWorkerRegister  Type = 19

	// Operator commands that end leases without breaking exclusion
	// (end.go): TypeEnd is End; TypeKeyControlForce is SetKeyControl with
	// Force set.
	TypeEnd             Type = 20
	TypeKeyControlForce Type = 21

	// TypeBy is By (by.go).
	TypeBy Type = 22

	// Group settings and the balancer's stuck marks (stuck.go).
	TypeGroupDefine Type = 23
	TypeMarkStuck   Type = 24

	// Commands that make the lease contract tighter (edit.go): a
	// compare-and-set group put, an atomic edit of a key's controls, and
	// the leader's removal of a key record that has been free for longer
	// than the retention. TypeKeyControlEnd is SetKeyControl as written
	// since controls end a refused holder's lease (see SetKeyControl).
	TypeGroupPutCAS    Type = 25
	TypeEditKeyControl Type = 26
	TypeForget         Type = 27
	TypeKeyControlEnd  Type = 28

	// TypeClusterID is the command that names the cluster (ADR 0015).
	TypeClusterID Type = 29

	// TypeHandover is Handover. It carries IgnorableFlag: a server that
	// does not know it skips it, and its next leader restarts every lease
	// at a full TTL, as it always did.
	TypeHandover Type = IgnorableFlag | 30

	// TypeBackupKey is the command that gives the cluster its backup key
	// (docs/adr/0029-restores-keep-acls-and-tokens.md).
	TypeBackupKey Type = 31

	// TypeGroupSetKeys is GroupSetKeys (group.go).
	TypeGroupSetKeys Type = 32

	// TypeGroupBalance is GroupBalance (balance.go).
	TypeGroupBalance Type = 33

	// TypePrepared is Prepared (warm.go).
	TypePrepared Type = 34
)

// version1 is the payload version of every command type but those below.
// A decoder keeps accepting every version it ever wrote.
const version1 byte = 1

// version2 is the payload version of an Acquire or a Release that carries
// a lease secret's hash: version 1's fields, then the hash. Those without
// one are still written as version 1, byte for byte as before. It is also
// that of an Assign with keys to prepare or a base index (Assign.Prepare,
// Assign.Base), after its version 1 fields.
const version2 byte = 2

// payloadVersion is the payload version c is written with.
func payloadVersion(c Command) byte {
	switch c := c.(type) {
	case Acquire:
		if c.SecretHash != "" {
			return version2
		}
	case Release:
		if c.SecretHash != "" {
			return version2
		}
	case Assign:
		if len(c.Prepare) > 0 || c.Base != 0 {
			return version2
		}
	}
	return version1
}

// versionKnown reports whether this build reads payload version v of type t.
func versionKnown(t Type, v byte) bool {
	switch t {
	case TypeAcquire, TypeRelease, TypeAssign:
		return v == version1 || v == version2
	}
	return v == version1
}

// maxBatch bounds the number of commands in one Batch.
const maxBatch = 1 << 16

var (
	// ErrUnknownType is returned by Decode for a type byte it does not know.
	// Machine.Apply panics on it unless the type carries IgnorableFlag.
	ErrUnknownType = errors.New("unknown command type")

	// ErrUnknownVersion is returned by Decode for a payload version newer
	// than this build understands.
	ErrUnknownVersion = errors.New("unknown command version")

	// ErrMalformed is returned by Decode when the payload cannot be read.
	ErrMalformed = errors.New("malformed command")
)

// Command is one entry of the lease log.
type Command interface {
	// Type is the command's type byte.
	Type() Type
	encode(e *encoder)
}

// Acquire asks for key on behalf of holder. It is granted when the key is
// free; when the same holder already holds it under the same secret, the
// lease is kept with its token (the retry of a lost reply must not fail).
type Acquire struct {
	Key      string
	Holder   string
	TTL      time.Duration
	Metadata map[string]string
	// Time is the proposing leader's wall clock in Unix nanoseconds, for
	// display only: the state machine never compares it with anything.
	Time int64
	// SecretHash is HashSecret of the acquirer's lease secret (version 2;
	// "" in the entries written before secrets existed). A grant stores
	// it; a kept lease must have it already.
	SecretHash string
}

// Release frees key if holder still holds it under token and the lease's
// secret hashes to SecretHash (version 2; "" in the entries written
// before secrets existed, which match only the leases acquired by them).
type Release struct {
	Key        string
	Holder     string
	Token      uint64
	SecretHash string
}

// Expire frees key if it is still held under token and Term is not older
// than the last established leader's term. Only the leader's lessor
// proposes it, never forwarded to another server.
type Expire struct {
	Key   string
	Token uint64
	Term  uint64
}

// Revoke frees key whoever holds it at once. Servers no longer propose it
// (they propose End); it keeps its meaning for the log entries that have it.
type Revoke struct {
	Key string
}

// LeaderEstablished records that the leader of Term has applied everything
// before it. Expire commands of older terms are ignored after it.
type LeaderEstablished struct {
	Term uint64
}

// Ignored stands for a command whose type this build does not know but
// which its writer flagged with IgnorableFlag. Applying it changes nothing.
// It is never encoded.
type Ignored struct {
	T Type
}

// Batch carries several commands in one log entry; they are applied in
// order, and each has its own result. Batches do not nest.
type Batch struct {
	Commands []Command
}

func (Acquire) Type() Type           { return TypeAcquire }
func (Release) Type() Type           { return TypeRelease }
func (Expire) Type() Type            { return TypeExpire }
func (Revoke) Type() Type            { return TypeRevoke }
func (LeaderEstablished) Type() Type { return TypeLeaderEstablished }
func (Batch) Type() Type             { return TypeBatch }
func (c Ignored) Type() Type         { return c.T }

func (Ignored) encode(*encoder) { panic("fsm: an Ignored command cannot be encoded") }

// known reports whether this build can decode commands of type t.
func known(t Type) bool {
	return t >= TypeAcquire && t <= TypeClusterID || t == TypeBackupKey || t == TypeHandover || t == TypeGroupSetKeys ||
		t == TypeGroupBalance || t == TypePrepared
}

func (c Acquire) encode(e *encoder) {
	e.string(c.Key)
	e.string(c.Holder)
	e.varint(int64(c.TTL))
	e.stringMap(c.Metadata)
	e.varint(c.Time)
	if c.SecretHash != "" { // version 2
		e.string(c.SecretHash)
	}
}

func (c Release) encode(e *encoder) {
	e.string(c.Key)
	e.string(c.Holder)
	e.uvarint(c.Token)
	if c.SecretHash != "" { // version 2
		e.string(c.SecretHash)
	}
}

// secretHash reads the hash of a version 2 Acquire or Release: present,
// and of SecretHashLen bytes.
func (d *decoder) secretHash() string {
	h := d.string()
	if d.err == nil && len(h) != SecretHashLen {
		d.fail(fmt.Errorf("secret hash of %d bytes, want %d", len(h), SecretHashLen))
	}
	return h
}

func (c Expire) encode(e *encoder) {
	e.string(c.Key)
	e.uvarint(c.Token)
	e.uvarint(c.Term)
}

func (c Revoke) encode(e *encoder) { e.string(c.Key) }

func (c LeaderEstablished) encode(e *encoder) { e.uvarint(c.Term) }

func (c Batch) encode(e *encoder) {
	e.uvarint(uint64(len(c.Commands)))
	for _, sub := range c.Commands {
		e.bytes(encodePlain(sub))
	}
}

// decode parses one command without an envelope (type, version,
// payload); allowBatch and allowBy say whether it may be a Batch or a By
// (a batch holds no batch, a By neither a batch nor a By).
func decode(b []byte, allowBatch, allowBy bool) (Command, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("%w: %d bytes, want at least 2", ErrMalformed, len(b))
	}
	t, version := Type(b[0]), b[1]
	if !known(t) {
		if t&IgnorableFlag != 0 {
			return Ignored{T: t}, nil
		}
		return nil, fmt.Errorf("%w: %d", ErrUnknownType, t)
	}
	if !versionKnown(t, version) {
		return nil, fmt.Errorf("%w: type %d version %d", ErrUnknownVersion, t, version)
	}
	if (t == TypeBatch && !allowBatch) || (t == TypeBy && !allowBy) {
		return nil, fmt.Errorf("%w: nested %s", ErrMalformed, pick(t == TypeBatch, "batch", "by"))
	}
	d := &decoder{buf: b[2:]}
	var c Command
	var err error // from a Batch or a By, whose entries decode on their own
	switch t {
	case TypeAcquire:
		a := Acquire{Key: d.string(), Holder: d.string(), TTL: time.Duration(d.varint()), Metadata: d.stringMap(), Time: d.varint()}
		if version >= version2 {
			a.SecretHash = d.secretHash()
		}
		c = a
	case TypeRelease:
		r := Release{Key: d.string(), Holder: d.string(), Token: d.uvarint()}
		if version >= version2 {
			r.SecretHash = d.secretHash()
		}
		c = r
	case TypeExpire:
		c = Expire{Key: d.string(), Token: d.uvarint(), Term: d.uvarint()}
	case TypeRevoke:
		c = Revoke{Key: d.string()}
	case TypeLeaderEstablished:
		c = LeaderEstablished{Term: d.uvarint()}
	case TypeBatch:
		c, err = decodeBatch(d)
	case TypeBy:
		c, err = decodeBy(d)
	case TypeClusterID:
		c = ClusterID{ID: d.string()}
	case TypeBackupKey:
		c = BackupKey{Key: d.bytes()}
	case TypeHandover:
		c = decodeHandover(d)
	case TypeEnd:
		c = End{Key: d.string(), Holder: d.string(), Force: d.bool()}
	// Groups, controls and workers (group.go, stuck.go, edit.go).
	case TypeGroupPut:
		c = GroupPut{Name: d.string(), Keys: d.strings(), MaxPerWorker: int(d.varint())}
	case TypeGroupDelete:
		c = GroupDelete{Name: d.string()}
	case TypeGroupKeys:
		c = GroupKeys{Name: d.string(), Add: d.strings(), Remove: d.strings()}
	case TypeGroupSetKeys:
		c = GroupSetKeys{Name: d.string(), Keys: d.strings()}
	case TypeGroupBalance:
		c = GroupBalance{Name: d.string(), Balance: decodeBalance(d)}
	case TypePrepared:
		c = decodePrepared(d)
	case TypeKeyControl, TypeKeyControlEnd, TypeKeyControlForce:
		c = SetKeyControl{Key: d.string(), Control: KeyControl{Disabled: d.bool(), Prohibited: d.strings()},
			KeepsHolder: t == TypeKeyControl, Force: t == TypeKeyControlForce}
	case TypeWorkerDrain:
		c = WorkerDrain{Worker: d.string(), Draining: d.bool()}
	case TypeAssign:
		a := Assign{Group: d.string(), Assignment: d.stringMap()}
		if version >= version2 {
			a.Prepare, a.Base = d.stringMap(), d.uvarint()
		}
		c = a
	case TypeGroupMax:
		c = GroupMax{Name: d.string(), MaxPerWorker: int(d.varint())}
	case TypeGroupDefine:
		c = decodeGroupDefine(d)
	case TypeMarkStuck:
		c = MarkStuck{Group: d.string(), Workers: d.strings()}
	case TypeGroupPutCAS:
		def := decodeGroupDefine(d)
		c = GroupPutCAS{Define: def, Index: d.uvarint()}
	case TypeEditKeyControl:
		c = EditKeyControl{Key: d.string(), SetDisabled: d.bool(), Disabled: d.bool(), Prohibit: d.strings(), Allow: d.strings(), Force: d.bool()}
	case TypeForget:
		c = Forget{Key: d.string(), Token: d.uvarint()}
	// ACL commands and the worker registration (acl.go).
	case TypeACLBootstrap:
		c = ACLBootstrap{Token: decodeToken(d)}
	case TypeACLTokenSet:
		c = ACLTokenSet{Token: decodeToken(d)}
	case TypeACLTokenDelete:
		c = ACLTokenDelete{AccessorID: d.string()}
	case TypeACLPolicySet:
		c = ACLPolicySet{Policy: ACLPolicy{Name: d.string(), Description: d.string(), Rules: decodeRules(d)}}
	case TypeACLPolicyDelete:
		c = ACLPolicyDelete{Name: d.string()}
	case TypeWorkerRegister:
		c = WorkerRegister{Worker: d.string(), Groups: d.strings(), Accessor: d.string()}
	default: // known(t) holds: a type left out here is a bug
		return nil, fmt.Errorf("%w: type %d has no decoder", ErrMalformed, t)
	}
	if err != nil {
		return nil, err
	}
	if err := d.finish(); err != nil {
		return nil, fmt.Errorf("%w: type %d: %w", ErrMalformed, t, err)
	}
	return c, nil
}

func decodeBatch(d *decoder) (Batch, error) {
	n := d.uvarint()
	if d.err == nil && (n > maxBatch || n > uint64(len(d.buf))) {
		d.fail(fmt.Errorf("batch of %d commands", n))
	}
	if d.err != nil {
		return Batch{}, fmt.Errorf("%w: batch: %w", ErrMalformed, d.err)
	}
	cmds := make([]Command, 0, n)
	for i := uint64(0); i < n; i++ {
		raw := d.bytes()
		if d.err != nil {
			return Batch{}, fmt.Errorf("%w: batch entry %d: %w", ErrMalformed, i, d.err)
		}
		sub, err := decode(raw, false, true)
		if err != nil {
			return Batch{}, fmt.Errorf("batch entry %d: %w", i, err)
		}
		cmds = append(cmds, sub)
	}
	return Batch{Commands: cmds}, nil
}

// MaxAccessorLen bounds By.Accessor.
const MaxAccessorLen = 128

// By runs Cmd on behalf of an operator: the events Cmd produces carry
// Accessor (the accessor id of the request's ACL token, or "anonymous").
// Cmd is applied exactly as it would be alone, with the same result. Cmd
// is neither a Batch nor a By; a By may sit inside a Batch.
type By struct {
	Accessor string
	Cmd      Command
}

// Type is TypeBy.
func (By) Type() Type { return TypeBy }

func (c By) encode(e *encoder) {
	e.string(c.Accessor)
	e.bytes(encodePlain(c.Cmd))
}

func decodeBy(d *decoder) (By, error) {
	accessor := d.string()
	raw := d.bytes()
	if d.err == nil && len(accessor) > MaxAccessorLen {
		d.fail(fmt.Errorf("accessor of %d bytes, the limit is %d", len(accessor), MaxAccessorLen))
	}
	if d.err != nil {
		return By{}, fmt.Errorf("%w: by: %w", ErrMalformed, d.err)
	}
	inner, err := decode(raw, false, false)
	if err != nil {
		return By{}, fmt.Errorf("by: %w", err)
	}
	return By{Accessor: accessor, Cmd: inner}, nil
}
