//go:build !tenure_clockdrift

package main

import (
	"github.com/hashicorp/go-hclog"

	"github.com/tenure-io/tenure/cluster"
)

// lessorClock is the real monotonic clock. Builds with the tag
// tenure_clockdrift (the fault suite's, never a release) replace it with a
// clock whose rate can be changed at run time (clock_drift.go).
func lessorClock(hclog.Logger) (cluster.Clock, error) { return cluster.SystemClock{}, nil }
