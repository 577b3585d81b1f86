//go:build tenure_unsafe_restore

package backup

// Keeps, the Policy of a restore, is KeepHeldOnly in this build: a
// deliberate bug, the negative control that the fault suite must catch
// (test/jepsen). Never built into a release.
var Keeps Policy = KeepHeldOnly

func init() {
	println("WARNING: server built with tenure_unsafe_restore: a restore gives keys back their older tokens")
}
