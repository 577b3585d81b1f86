package client

import (
	"context"
	"net/http"
	"time"
)

// PlacementHealth asks the leader for unowned keys, stuck workers, groups
// below their minimum and leases not renewed for longer than threshold (0:
// two thirds of each lease's TTL). It needs read on every group.
func (c *Client) PlacementHealth(ctx context.Context, threshold time.Duration) (*PlacementHealth, error) {
	req := &request{method: http.MethodGet, path: "/v1/health/placement"}
	if threshold > 0 {
		req.query = map[string]string{"threshold": threshold.String()}
	}
	return callOnly[PlacementHealth](ctx, c, req, "placement health")
}
