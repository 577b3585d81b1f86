//go:build jepsen_nofence

package main

// fencing is off in this build (-tags jepsen_nofence): the store accepts
// every write, stale tokens included. It is the negative control of the
// suite: the checkers must find the lost updates it lets through.
const fencing = false
