//go:build tenure_unsafe_restore

package backup

// Keeps, which chooses the key records a restore keeps, is KeepHeldOnly
// in this build: a deliberate bug, the negative control that the fault
// suite must catch (test/jepsen). Never built into a release.
var Keeps = KeepHeldOnly

func init() {
	println("WARNING: server built with tenure_unsafe_restore: a restore gives keys back their older tokens")
}
