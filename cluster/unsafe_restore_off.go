//go:build !tenure_unsafe_restore

package cluster

// restoreKeeps is keepEveryRecord in every real build. Builds with the
// tag tenure_unsafe_restore (a negative control of the fault suite, never
// a release) replace it with keepHeldOnly (unsafe_restore_on.go).
var restoreKeeps restorePolicy = keepEveryRecord
