package jepsen

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"time"
)

// snapshotInstall cuts a follower off, writes enough entries that the
// leader's log no longer holds what the follower misses (the servers keep
// 128 entries after a snapshot), forces a snapshot, and heals: the follower
// can only catch up through InstallSnapshot. The undo waits for the
// follower's log to show the install and reports when it does not.
func snapshotInstall(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
	l, rest := w.pickLeader(ctx, rng)
	f := rest[rng.IntN(len(rest))]
	others := w.namesExcept(f)
	if err := w.net.Partition([]string{f.name}, others); err != nil {
		return nil, "", 0, err
	}
	before := countInLog(f.logPath, installedMarker)
	written := 0
	for i := range 400 { // each acquire is a log entry of its own or shares a batch
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := w.call(cctx, "PUT", w.url(l, fmt.Sprintf("/v1/leases/snapfill-%d", i)), map[string]any{"holder": "snapfill", "ttl": "1s"}, nil)
		cancel()
		if err == nil {
			written++
		}
	}
	// Every server but the cut-off one snapshots (the operator route
	// snapshots the node it is sent to), so whoever leads after healing
	// has compacted what the follower misses.
	desc := fmt.Sprintf("%s cut off while %d entries were written and the others snapshotted", f.name, written)
	for _, s := range w.servers {
		if s == f {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := w.call(cctx, "POST", w.url(s, "/v1/operator/snapshot"), map[string]any{}, nil)
		cancel()
		if err != nil {
			desc += fmt.Sprintf(" (%s snapshot: %v)", s.name, err)
		}
	}
	undo := func() error {
		if err := w.net.Heal(); err != nil {
			return err
		}
		deadline := time.Now().Add(30 * time.Second) // above Raft's 10s transport timeout and a retry
		for time.Now().Before(deadline) && ctx.Err() == nil {
			if countInLog(f.logPath, installedMarker) > before {
				w.snapshotInstalls.Add(1)
				return nil
			}
			time.Sleep(200 * time.Millisecond)
		}
		w.log.Warn("follower did not install a snapshot", "follower", f.name)
		return nil
	}
	return undo, desc, time.Second, nil
}

// installedMarker is what hashicorp/raft logs when a follower has
// installed a snapshot sent by the leader.
const installedMarker = "Installed remote snapshot"

func countInLog(path, s string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte(s))
}
