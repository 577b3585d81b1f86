package redisfence_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/redisfence"
)

// The Redis team's poller owns each session by a lease and records each
// poll's result in the session's Redis hash. A poller that paused past its
// lease and wakes after another took the session over has its write
// refused by Redis itself, in the script that would have made it.
func Example_poller() {
	var c *client.Client // client.New(client.Config{...})
	// With go-redis: rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}) and
	// eval = func(ctx context.Context, script string, keys []string, args ...any) (any, error) {
	//	return rdb.Eval(ctx, script, keys, args...).Result()
	// }
	var eval redisfence.Eval
	fence := redisfence.New(eval)
	ctx := context.Background()

	sessionID := "42"
	lease, err := c.Acquire(ctx, "poll/"+sessionID, client.WithTTL(30*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(context.Background())
	// One hash tag for the fence key and the session's hash: one slot on
	// Redis Cluster.
	fenceKey, session := "{session:"+sessionID+"}:fence", "{session:"+sessionID+"}"
	for lease.Context().Err() == nil {
		result := time.Now().UTC().Format(time.RFC3339) // poll the endpoint here
		_, err := fence.Do(lease.Context(), fenceKey, lease.Token(), []string{session}, "HSET", "last_poll", result)
		if errors.Is(err, redisfence.ErrStale) {
			return // another poller owns the session now
		}
		time.Sleep(10 * time.Second)
	}
}
