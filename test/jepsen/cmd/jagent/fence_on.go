//go:build !jepsen_nofence

package main

// fencing says whether the store refuses writes whose token is below the
// highest it has seen for the key. It is off only in the negative-control
// build (-tags jepsen_nofence), whose histories the checkers must reject.
const fencing = true
