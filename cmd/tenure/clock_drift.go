//go:build tenure_clockdrift

package main

import (
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenure-io/tenure/cluster"
)

// lessorClock, in a build for the fault suite, is a clock whose rate
// relative to the real monotonic clock is read every 100ms from the file
// named by TENURE_CLOCK_RATE_FILE (a decimal such as 1.05; missing or empty
// means 1). It lets the suite make one server's lease clock run fast or
// slow. Without the variable it is the real clock.
func lessorClock(log hclog.Logger) (cluster.Clock, error) {
	path := os.Getenv("TENURE_CLOCK_RATE_FILE")
	if path == "" {
		return cluster.SystemClock{}, nil
	}
	c := newDriftClock()
	if err := c.load(path); err != nil {
		return nil, fmt.Errorf("TENURE_CLOCK_RATE_FILE: %w", err)
	}
	log.Warn("lessor clock rate is injected (fault-suite build)", "file", path)
	go func() {
		for range time.Tick(100 * time.Millisecond) {
			if err := c.load(path); err != nil {
				log.Warn("clock rate file", "error", err)
			}
		}
	}()
	return c, nil
}
