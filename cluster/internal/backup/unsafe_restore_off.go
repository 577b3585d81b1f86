//go:build !tenure_unsafe_restore

package backup

// Keeps chooses which key records of the running state a restore keeps
// (fsm.RestoreTarget.Leases, cluster.Node.RestoreSnapshot):
// KeepEveryRecord in every real build. Builds with the tag
// tenure_unsafe_restore (a negative control of the fault suite, never a
// release) replace it with KeepHeldOnly (unsafe_restore_on.go).
var Keeps = KeepEveryRecord
