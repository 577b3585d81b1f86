package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
)

// A worker refuses to start under a group name or an id that the cluster
// would refuse or ignore, naming the field, before it touches the network.
func TestWorkerRefusesBadNames(t *testing.T) {
	c := offlineClient(t, nil)
	h := Handler(func(ctx context.Context, key string, token uint64) { <-ctx.Done() })
	for _, tt := range []struct {
		name, group, id, want string
	}{
		{"slash in the group", "a/b", "w1", "group"},
		{"hash in the id", "g", "w#1", "worker id"},
		{"space in the id", "g", "w 1", "worker id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			err := New(c, tt.group, h, WithWorkerID(tt.id), WithGossipAddr("127.0.0.1:0")).Run(ctx)
			if !errors.Is(err, client.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want client.ErrInvalid naming %q", err, tt.want)
			}
		})
	}
}
