package fsm

import (
	"crypto/sha256"
	"crypto/subtle"
)

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
