//go:build !jepsen_nofence

package main

import "github.com/hashicorp/go-hclog"

// storeFencing says whether the store refuses reads and writes whose token
// is below the highest it has seen for the key: it does in every build but
// the negative control's (-tags jepsen_nofence, fence_off.go), whose
// histories the checkers must reject.
func storeFencing(hclog.Logger) bool { return true }
