//go:build !tenure_unsafe_rounds

package rounds

// acceptOlderRounds is false in every real build: an answer counts only
// for the round it names. Builds with the tag tenure_unsafe_rounds (a
// negative control of the fault suite, never a release) set it
// (unsafe_rounds_on.go).
const acceptOlderRounds = false
