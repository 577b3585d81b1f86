//go:build jepsen_nofence

package main

import "github.com/hashicorp/go-hclog"

// storeFencing is false in this build (-tags jepsen_nofence): the store
// accepts every write, stale tokens included. It is the negative control of
// the suite: the checkers must find the lost updates it lets through.
func storeFencing(log hclog.Logger) bool {
	log.Warn("!!! NEGATIVE CONTROL BUILD (-tags jepsen_nofence): the store does NOT check fencing tokens and accepts every write; its histories must fail the checks !!!")
	return false
}
