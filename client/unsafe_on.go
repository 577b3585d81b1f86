//go:build tenure_unsafe_keep

package client

// unsafeKeepPastDeadline makes a lease outlive its local deadline, until a
// renewal is refused: a deliberate bug that the fault suite must catch
// (test/jepsen). Never built into a release.
const unsafeKeepPastDeadline = true

func init() {
	println("WARNING: client built with tenure_unsafe_keep: leases are kept past their deadline")
}
