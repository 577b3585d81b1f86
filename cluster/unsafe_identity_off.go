//go:build !tenure_unsafe_identity

package cluster

// peerIdentity checks node ids and keeps voters in place in every real
// build. Builds with the tag tenure_unsafe_identity (a negative control of
// the fault suite, never a release) replace it with the old behaviour
// (unsafe_identity_on.go).
var peerIdentity = identityPolicy{checkIDs: true}
