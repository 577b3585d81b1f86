package check

import (
	"errors"
	"fmt"

	"github.com/tenure-io/tenure/fsm"
)

// Limits on holders, metadata and secrets, as docs/http-api.md states them.
const (
	MaxMetadataEntries = 16
	MaxMetadataKey     = 64
	MaxMetadataValue   = 1024
	MaxHolderLen       = 256
	// MinSecretLen and MaxSecretLen bound a lease secret, made of
	// [A-Za-z0-9_-] (docs/adr/0030-lease-secrets.md).
	MinSecretLen = 32
	MaxSecretLen = 128
)

// ErrInvalid: the request breaks a rule; the error names the field.
var ErrInvalid = errors.New("invalid request")

// ErrNotFound: the key was never seen, or the server is unknown.
var ErrNotFound = errors.New("not found")

// InvalidError names the field that broke a rule.
type InvalidError struct {
	Field string
	Err   error
}

func (e *InvalidError) Error() string { return fmt.Sprintf("%s: %v", e.Field, e.Err) }

// Unwrap makes errors.Is(err, ErrInvalid) true, and keeps the cause.
func (e *InvalidError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

// Invalid is an *InvalidError of field, its cause formatted as fmt.Errorf.
func Invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Err: fmt.Errorf(format, args...)}
}

// Metadata checks a lease's metadata: at most MaxMetadataEntries, keys of
// 1 to MaxMetadataKey bytes, values of at most MaxMetadataValue, and no
// control character.
func Metadata(md map[string]string) error {
	if len(md) > MaxMetadataEntries {
		return Invalid("metadata", "%d entries, the limit is %d", len(md), MaxMetadataEntries)
	}
	for k, v := range md {
		if k == "" || len(k) > MaxMetadataKey {
			return Invalid("metadata", "key %q must be 1 to %d bytes", k, MaxMetadataKey)
		}
		if len(v) > MaxMetadataValue {
			return Invalid("metadata", "value of %q is %d bytes, the limit is %d", k, len(v), MaxMetadataValue)
		}
		if i := ControlByte(k + v); i >= 0 {
			return Invalid("metadata", "entry %q has a control character (byte %#x); none is allowed", k, (k + v)[i])
		}
	}
	return nil
}

// ControlByte is the index of the first ASCII control character of s (a
// byte below 0x20, or 0x7f), or -1. Holders and metadata are shown in
// logs, lists and the inspection page: a newline or an escape sequence in
// them would forge lines there.
func ControlByte(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return i
		}
	}
	return -1
}

// Holder checks a holder: 1 to MaxHolderLen bytes, no control character.
func Holder(holder string) error {
	if holder == "" || len(holder) > MaxHolderLen {
		return Invalid("holder", "must be 1 to %d bytes, got %d", MaxHolderLen, len(holder))
	}
	if i := ControlByte(holder); i >= 0 {
		return Invalid("holder", "byte %d is a control character (%#x); none is allowed", i, holder[i])
	}
	return nil
}

// Secret checks a lease secret: MinSecretLen to MaxSecretLen
// bytes of [A-Za-z0-9_-] (hex and unpadded URL-safe base64 fit). Its
// errors name the field secret and never echo the secret.
func Secret(secret string) error {
	if len(secret) == 0 {
		return Invalid("secret", "required: the lease secret returned by the acquire")
	}
	if len(secret) < MinSecretLen || len(secret) > MaxSecretLen {
		return Invalid("secret", "must be %d to %d bytes, got %d", MinSecretLen, MaxSecretLen, len(secret))
	}
	for i := 0; i < len(secret); i++ {
		c := secret[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return Invalid("secret", "byte %d is not one of [A-Za-z0-9_-]", i)
		}
	}
	return nil
}

// Token checks a fencing token: tokens start at 1.
func Token(token uint64) error {
	if token == 0 {
		return Invalid("token", "required, and tokens start at 1")
	}
	return nil
}

// Prohibited checks the prohibited holders of a key's controls; its
// errors name field.
func Prohibited(field string, holders []string) error {
	if len(holders) > fsm.MaxProhibited {
		return Invalid(field, "%d holders, the limit is %d", len(holders), fsm.MaxProhibited)
	}
	for _, h := range holders {
		if h == "" || len(h) > MaxHolderLen {
			return Invalid(field, "holder %q: must be 1 to %d bytes", h, MaxHolderLen)
		}
		if ControlByte(h) >= 0 {
			return Invalid(field, "holder %q: has a control character; none is allowed", h)
		}
	}
	return nil
}
