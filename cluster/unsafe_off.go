//go:build !tenure_unsafe_renew

package cluster

// UnsafeLocalRenewals is false in every real build: renewals are answered
// only by the established leader, after a quorum round.
const UnsafeLocalRenewals = false
