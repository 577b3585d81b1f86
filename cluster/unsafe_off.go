//go:build !tenure_unsafe_renew

package cluster

// renewals is quorumRenewals in every real build. Builds with the tag
// tenure_unsafe_renew (a negative control of the fault suite, never a
// release) replace it with localRenewals (unsafe_on.go).
var renewals = quorumRenewals
