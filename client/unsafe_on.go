//go:build tenure_unsafe_keep

package client

import "time"

// passed, in this build, never reports a deadline as passed, so a lease
// outlives its local deadline until a renewal is refused: a deliberate bug
// that the fault suite must catch (test/jepsen). Never built into a
// release.
func passed(time.Time, time.Time) bool { return false }

func init() {
	println("WARNING: client built with tenure_unsafe_keep: leases are kept past their deadline")
}
