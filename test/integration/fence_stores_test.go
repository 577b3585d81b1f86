package integration

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/redisfence"
	"github.com/tenure-io/tenure/client/sqlfence"
	"github.com/tenure-io/tenure/test/harness"
)

// pausedHandover has holder "paused" take key for ttl and never renew it
// (a process stopped right after it acquired), then has "next" wait for
// the key, which it gets once the lease expires on the leader. It returns
// both tokens; next's is the higher.
func pausedHandover(t *testing.T, ctx context.Context, c *cluster, key string, ttl time.Duration) (paused, next uint64) {
	t.Helper()
	p, n := c.newClient(t, "paused"), c.newClient(t, "next")
	old, _, err := p.Leases().Acquire(ctx, key, client.AcquireRequest{Holder: "paused", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	l, _, err := n.Leases().Acquire(ctx, key, client.AcquireRequest{Holder: "next", TTL: time.Minute, Wait: time.Minute})
	if err != nil {
		t.Fatalf("next: %v", err)
	}
	if l.Token <= old.Token {
		t.Fatalf("next's token %d is not above the paused holder's %d", l.Token, old.Token)
	}
	return old.Token, l.Token
}

// TestSQLFenceRefusesAPausedHolder is the tracker team's analytics on
// PostgreSQL with sqlfence: a holder that wrote, paused past its TTL and
// wakes after another holder took the key over and wrote, has its late
// write refused (sqlfence.ErrStale) in its own transaction, which rolls
// back; the table keeps the new holder's row.
func TestSQLFenceRefusesAPausedHolder(t *testing.T) {
	db, _ := startPostgres(t)
	c := startCluster(t, 3)
	ctx := harness.Context(t, 2*time.Minute)
	d, err := sqlfence.Postgres("tenure_fence")
	if err != nil {
		t.Fatal(err)
	}
	f := sqlfence.New(d)
	if err := f.CreateTable(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE scenes (scene TEXT PRIMARY KEY, frame INT NOT NULL, writer TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	write := func(token uint64, frame int, writer string) error {
		return f.Write(ctx, db, "scene-01", token, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO scenes VALUES ('scene-01', $1, $2)
				ON CONFLICT (scene) DO UPDATE SET frame = EXCLUDED.frame, writer = EXCLUDED.writer`, frame, writer)
			return err
		})
	}

	old, next := pausedHandover(t, ctx, c, "scene-01", 2*time.Second)
	if err := write(next, 2, "next"); err != nil {
		t.Fatalf("the new holder's write: %v", err)
	}
	err = write(old, 1, "paused")
	if !errors.Is(err, sqlfence.ErrStale) || !errors.Is(err, client.ErrStaleToken) {
		t.Fatalf("the paused holder's late write: %v, want sqlfence.ErrStale", err)
	}
	var frame int
	var writer string
	if err := db.QueryRowContext(ctx, `SELECT frame, writer FROM scenes WHERE scene = 'scene-01'`).Scan(&frame, &writer); err != nil {
		t.Fatal(err)
	}
	if frame != 2 || writer != "next" {
		t.Fatalf("scene-01 holds frame %d by %s, want frame 2 by next", frame, writer)
	}
	// The same token again is accepted: a holder writes many times.
	if err := write(next, 3, "next"); err != nil {
		t.Fatalf("the new holder's second write: %v", err)
	}
}

// TestSQLFenceWaitsForTheWriterItSupersedes: a newer holder's Advance
// waits for an older holder's open transaction on the same resource, and
// then records its higher token; the older one, had it not committed yet,
// is refused after. Writes commit in token order whatever the timing.
func TestSQLFenceWaitsForTheWriterItSupersedes(t *testing.T) {
	db, _ := startPostgres(t)
	ctx := harness.Context(t, time.Minute)
	d, _ := sqlfence.Postgres("")
	f := sqlfence.New(d)
	if err := f.CreateTable(ctx, db); err != nil {
		t.Fatal(err)
	}
	older, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer older.Rollback()
	if err := f.Advance(ctx, older, "r", 5); err != nil {
		t.Fatal(err)
	}
	newer := make(chan error, 1)
	go func() {
		newer <- f.Write(ctx, db, "r", 6, func(*sql.Tx) error { return nil })
	}()
	select {
	case err := <-newer:
		t.Fatalf("the newer holder's write finished (%v) while the older one's transaction held the fence", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := older.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-newer; err != nil {
		t.Fatalf("the newer holder's write after the older one committed: %v", err)
	}
	if err := f.Write(ctx, db, "r", 5, func(*sql.Tx) error { return nil }); !errors.Is(err, sqlfence.ErrStale) {
		t.Fatalf("token 5 after 6: %v, want ErrStale", err)
	}
	if err := f.Advance(ctx, db, "r", 0); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("token 0: %v, want ErrInvalid", err)
	}
}

// TestRedisFenceRefusesAPausedHolder is the poller team's sessions on
// Redis with redisfence: the paused holder's late HSET is refused
// (redisfence.ErrStale) and writes nothing; the new holder's stays.
func TestRedisFenceRefusesAPausedHolder(t *testing.T) {
	rdb, _ := startRedis(t)
	c := startCluster(t, 3)
	ctx := harness.Context(t, 2*time.Minute)
	f := redisfence.New(func(ctx context.Context, script string, keys []string, args ...any) (any, error) {
		return rdb.Eval(ctx, script, keys, args...).Result()
	})
	const fenceKey, session = "{poll:session:42}:fence", "{poll:session:42}"
	old, next := pausedHandover(t, ctx, c, "poll/session-42", 2*time.Second)
	if _, err := f.Do(ctx, fenceKey, next, []string{session}, "HSET", "poller", "next"); err != nil {
		t.Fatalf("the new holder's write: %v", err)
	}
	_, err := f.Do(ctx, fenceKey, old, []string{session}, "HSET", "poller", "paused")
	if !errors.Is(err, redisfence.ErrStale) || !errors.Is(err, client.ErrStaleToken) {
		t.Fatalf("the paused holder's late write: %v, want redisfence.ErrStale", err)
	}
	if got, err := rdb.HGet(ctx, session, "poller").Result(); err != nil || got != "next" {
		t.Fatalf("the session's poller is %q (%v), want next", got, err)
	}
	// The reply of the guarded command comes back; the same token again
	// is accepted; tokens compare as numbers, not as text (9 < 10).
	if n, err := f.Do(ctx, "{c}:fence", 9, []string{"{c}"}, "INCRBY", 5); err != nil || n != int64(5) {
		t.Fatalf("INCRBY under token 9: %v %v, want 5", n, err)
	}
	if n, err := f.Do(ctx, "{c}:fence", 10, []string{"{c}"}, "INCRBY", 5); err != nil || n != int64(10) {
		t.Fatalf("INCRBY under token 10: %v %v, want 10", n, err)
	}
	if _, err := f.Do(ctx, "{c}:fence", 9, []string{"{c}"}, "INCRBY", 5); !errors.Is(err, redisfence.ErrStale) {
		t.Fatalf("token 9 after 10: %v, want ErrStale", err)
	}
	if got, _ := rdb.Get(ctx, "{c}").Int(); got != 10 {
		t.Fatalf("counter %d, want 10", got)
	}
	// Advance claims the resource before a read: an older token's write
	// is refused from then on, and the claim itself writes nothing else.
	if err := f.Advance(ctx, "{c}:fence", 11); err != nil {
		t.Fatalf("Advance to 11: %v", err)
	}
	if _, err := f.Do(ctx, "{c}:fence", 10, []string{"{c}"}, "INCRBY", 5); !errors.Is(err, redisfence.ErrStale) {
		t.Fatalf("token 10 after a claim by 11: %v, want ErrStale", err)
	}
	if err := f.Advance(ctx, "{c}:fence", 10); !errors.Is(err, redisfence.ErrStale) {
		t.Fatalf("Advance to 10 after 11: %v, want ErrStale", err)
	}
	if got, _ := rdb.Get(ctx, "{c}").Int(); got != 10 {
		t.Fatalf("counter %d after the claims, want 10", got)
	}
}
