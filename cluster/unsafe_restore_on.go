//go:build tenure_unsafe_restore

package cluster

// restoreKeeps, in this build, is keepHeldOnly: a deliberate bug, the
// negative control that the fault suite must catch (test/jepsen). Never
// built into a release.
var restoreKeeps restorePolicy = keepHeldOnly

func init() {
	println("WARNING: server built with tenure_unsafe_restore: a restore gives keys back their older tokens")
}
