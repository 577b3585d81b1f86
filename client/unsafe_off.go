//go:build !tenure_unsafe_keep

package client

// unsafeKeepPastDeadline is false in every real build: a lease ends at its
// local deadline.
const unsafeKeepPastDeadline = false
