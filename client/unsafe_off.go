//go:build !tenure_unsafe_keep

package client

import "time"

// passed reports whether a lease's local deadline has passed:
// deadlinePassed in every real build. Builds with the tag
// tenure_unsafe_keep (a negative control of the fault suite, never a
// release) replace it (unsafe_on.go).
func passed(now, deadline time.Time) bool { return deadlinePassed(now, deadline) }
