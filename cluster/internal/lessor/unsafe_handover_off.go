//go:build !tenure_unsafe_handover

package lessor

import "time"

// handedLeft is the identity in every real build: a hand-over carries the
// time each lease has left. Builds with the tag tenure_unsafe_handover (a
// negative control of the fault suite, never a release) replace it
// (unsafe_handover_on.go).
func handedLeft(left time.Duration) time.Duration { return left }
