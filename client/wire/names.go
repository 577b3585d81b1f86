package wire

import (
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxNameLen is the longest group name or worker id, in bytes: the
// longest key.
const MaxNameLen = 256

// NameProblem applies the cluster's rule for group names and worker ids: 1
// to MaxNameLen bytes of [A-Za-z0-9._:-] (the rule of keys without "/").
// It returns what is wrong with name, or "" when it follows the rule. The
// servers refuse other names; a worker checks its own before it starts, so
// that it never announces an id the balancer would ignore.
func NameProblem(name string) string {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Sprintf("must be 1 to %d bytes, got %d", MaxNameLen, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return fmt.Sprintf("byte %d (%s) is not one of [A-Za-z0-9._:-]", i, charAt(name, i))
		}
	}
	return ""
}

// charAt quotes the character that starts at byte i of s, as typed: a
// whole UTF-8 character ('é'), or the byte alone when it starts none.
func charAt(s string, i int) string {
	if r, n := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || n > 1 {
		return strconv.QuoteRune(r)
	}
	return strconv.Quote(s[i : i+1])
}

// MinSecretLen and MaxSecretLen bound a lease secret, made of
// [A-Za-z0-9_-] (docs/adr/0030-lease-secrets.md): hex and unpadded
// URL-safe base64 fit.
const (
	MinSecretLen = 32
	MaxSecretLen = 128
)

// SecretProblem applies the rule of lease secrets: MinSecretLen to
// MaxSecretLen bytes of [A-Za-z0-9_-]. It returns what is wrong with
// secret, never echoing it, or "" when it follows the rule.
func SecretProblem(secret string) string {
	if len(secret) < MinSecretLen || len(secret) > MaxSecretLen {
		return fmt.Sprintf("must be %d to %d bytes, got %d", MinSecretLen, MaxSecretLen, len(secret))
	}
	for i := 0; i < len(secret); i++ {
		c := secret[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Sprintf("byte %d is not one of [A-Za-z0-9_-]", i)
		}
	}
	return ""
}

// NewLeaseSecret returns a new lease secret: 128 bits from crypto/rand in
// 32 hex digits. A Client makes one at New (Config.LeaseSecret) and sends
// it with every acquisition, renewal and release; a server makes one for
// an acquire that names none.
func NewLeaseSecret() string {
	b := make([]byte, 16)
	_, _ = crand.Read(b) // never fails on supported platforms
	return hex.EncodeToString(b)
}

// LoadProblem applies the cluster's rule for loads (LeaseRef.Load,
// RenewManyBody.Load, MemberMeta.LoadCapacity): a number from 0 to
// MaxLoad. It returns what is wrong with load, or "" when it follows the
// rule; the client checks loads before it sends them.
func LoadProblem(load float64) string {
	if load >= 0 && load <= MaxLoad { // false for NaN
		return ""
	}
	return fmt.Sprintf("%v is outside [0, %g]", load, float64(MaxLoad))
}

// WorkerOf is the worker id of a lease holder: a worker's holders are its
// id, '#' and a suffix of the process (so two processes started with one
// id by mistake hold different leases); any other holder is its own id.
func WorkerOf(holder string) string {
	if i := strings.LastIndexByte(holder, '#'); i > 0 {
		return holder[:i]
	}
	return holder
}
