package fsm

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// MaxKeyLen is the longest key, in bytes.
const MaxKeyLen = 256

// ErrInvalidKey is wrapped by ValidateKey's errors.
var ErrInvalidKey = errors.New("invalid key")

// ValidateKey checks the lease model's rule for keys: 1 to 256 bytes of
// [A-Za-z0-9._:/-].
func ValidateKey(key string) error {
	if len(key) == 0 {
		return fmt.Errorf("%w: key is empty", ErrInvalidKey)
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: key is %d bytes, the limit is %d", ErrInvalidKey, len(key), MaxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if !keyByte(key[i]) {
			return fmt.Errorf("%w: byte %d (%s) is not one of [A-Za-z0-9._:/-]", ErrInvalidKey, i, charAt(key, i))
		}
	}
	return nil
}

// charAt quotes the character that starts at byte i of s, as typed: a
// whole UTF-8 character ('é'), or the byte alone when it starts none.
func charAt(s string, i int) string {
	if r, n := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || n > 1 {
		return strconv.QuoteRune(r)
	}
	return strconv.Quote(s[i : i+1])
}

func keyByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	case c == '.', c == '_', c == ':', c == '/', c == '-':
		return true
	}
	return false
}

// Reason says why a key is free.
type Reason uint8

// Reasons a key is free, or a held lease is ending. Their numbers are part
// of the snapshot format: add values, never renumber.
const (
	ReasonNone     Reason = 0
	ReasonReleased Reason = 1
	ReasonExpired  Reason = 2
	ReasonRevoked  Reason = 3
	// ReasonDisabled and ReasonProhibited: an operator disabled the key,
	// or prohibited its holder on it, while it was held.
	ReasonDisabled   Reason = 4
	ReasonProhibited Reason = 5
	// ReasonNeverAcquired marks the free record that List makes up for a
	// group key without a lease record (Filter.NeverAcquired). It is never
	// stored, so never in a snapshot.
	ReasonNeverAcquired Reason = 6
)

// maxReason is the highest Reason this build knows.
const maxReason = ReasonProhibited

func (r Reason) String() string {
	names := [...]string{"", "released", "expired", "revoked", "disabled", "prohibited", "never_acquired"}
	if int(r) < len(names) {
		return names[r]
	}
	return ""
}

// Lease is the replicated record of one key. A free key keeps its last
// holder and token so that fencing validators can still compare.
//
// Machine never modifies a Lease it has handed out or stored: every change
// stores a new value, so callers may keep the values they read.
type Lease struct {
	Key    string
	Holder string
	Token  uint64
	TTL    time.Duration
	Held   bool
	// Reason says why the key is free; ReasonNone while it is held.
	Reason Reason
	// Ending is not ReasonNone while a held lease is ending: an operator
	// revoked it, disabled its key or prohibited its holder on it. An
	// ending lease is still held (nobody else may take it) but is never
	// kept or renewed; the leader frees it when its deadline passes, and
	// Reason is then Ending. A Release by its holder frees it as usual.
	Ending   Reason
	Metadata map[string]string
	// AcquiredAt is the acquiring leader's wall clock, Unix nanoseconds.
	AcquiredAt int64
	// CreateIndex is the Raft index that first acquired the key;
	// ModifyIndex the one that last changed it.
	CreateIndex uint64
	ModifyIndex uint64
	// SecretHash is HashSecret of the lease secret its acquirer chose
	// (docs/adr/0030-lease-secrets.md): renewing, releasing, acquiring
	// again and changing the metadata need the secret. "" on a free key,
	// and on a lease acquired before secrets existed, which nobody can act
	// on as its holder any more. Never shown to readers.
	SecretHash string
}

func (l *Lease) encode(e *encoder) {
	e.string(l.Key)
	e.string(l.Holder)
	e.uvarint(l.Token)
	e.varint(int64(l.TTL))
	e.bool(l.Held)
	e.byte(byte(l.Reason))
	e.stringMap(l.Metadata)
	e.varint(l.AcquiredAt)
	e.uvarint(l.CreateIndex)
	e.uvarint(l.ModifyIndex)
}

func decodeLease(d *decoder) *Lease {
	l := &Lease{
		Key:    d.string(),
		Holder: d.string(),
		Token:  d.uvarint(),
		TTL:    time.Duration(d.varint()),
	}
	switch held := d.byte(); held {
	case 0:
	case 1:
		l.Held = true
	default:
		d.fail(fmt.Errorf("lease %q: held flag %d", l.Key, held))
	}
	l.Reason = Reason(d.byte())
	if l.Reason > maxReason {
		d.fail(fmt.Errorf("lease %q: reason %d", l.Key, l.Reason))
	}
	l.Metadata = d.stringMap()
	l.AcquiredAt = d.varint()
	l.CreateIndex = d.uvarint()
	l.ModifyIndex = d.uvarint()
	return l
}

// SecretHashLen is the length of a lease secret's hash: a SHA-256 sum.
const SecretHashLen = sha256.Size

// HashSecret returns the hash of a lease secret as the state machine
// stores it (Lease.SecretHash): its SHA-256 sum, raw. Servers hash the
// secret of a request before they propose or compare, so the log, the
// snapshots and the backups never hold a secret.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return string(sum[:])
}

// SecretMatches reports whether hash, the hash of the secret a request
// presented, is the lease's stored hash, in time that does not depend on
// where they differ. A lease acquired before secrets existed stores none
// (""): only a command that carries none either matches it, which only
// the log entries written before secrets existed do (servers always send
// a hash), so such a lease can no longer be renewed, released or
// re-acquired by its holder; it ends at its deadline.
func SecretMatches(stored, hash string) bool {
	if len(stored) != len(hash) {
		return false
	}
	// As subtle.ConstantTimeCompare, on strings: every byte is compared,
	// and without the two copies that a conversion to []byte would make
	// on every renewal.
	var diff byte
	for i := 0; i < len(stored); i++ {
		diff |= stored[i] ^ hash[i]
	}
	return subtle.ConstantTimeByteEq(diff, 0) == 1
}
