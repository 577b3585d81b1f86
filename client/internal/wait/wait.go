// Package wait holds the pause that the client's retries and the worker's
// loops share. It is internal to the client module: not part of its API.
package wait

import (
	"context"
	"time"
)

// Sleep waits d, or returns ctx's error when it ends first.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
