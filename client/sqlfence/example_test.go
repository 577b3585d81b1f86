package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"log"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/sqlfence"
)

// The tracker team's analytics service stores the scene data that trackers
// publish. Each message carries the publishing tracker's fencing token
// (its `_version`); a message from a tracker that paused past its lease,
// after another tracker took the scene over and published, is refused by
// the database itself, in the transaction that would have stored it.
func Example_analytics() {
	var db *sql.DB // sql.Open("pgx", dsn), or any PostgreSQL driver
	ctx := context.Background()
	d, err := sqlfence.Postgres("tenure_fence")
	if err != nil {
		log.Fatal(err)
	}
	fence := sqlfence.New(d)
	if err := fence.CreateTable(ctx, db); err != nil {
		log.Fatal(err)
	}

	type message struct {
		SceneID string `json:"scene_id"`
		Data    []byte `json:"data"`
		Version uint64 `json:"_version"` // the tracker's lease token
	}
	store := func(m message) error {
		err := fence.Write(ctx, db, "scenes/"+m.SceneID, m.Version, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO scene_data (scene_id, data, version) VALUES ($1, $2, $3)`,
				m.SceneID, m.Data, int64(m.Version))
			return err
		})
		if errors.Is(err, sqlfence.ErrStale) {
			log.Printf("dropped a message of %s from a superseded tracker (version %d)", m.SceneID, m.Version)
			return nil
		}
		return err
	}
	_ = store
}

// The SQL Server team's executor fences every write that changes an
// execution's state with its lease's token, in its own transaction: a
// refused write means the lease has passed to another executor, so this
// one stops at once and drops leadership. (On SQL Server, build the
// Dialect from the statements in docs/fencing.md; here PostgreSQL's.)
func Example_executor() {
	var db *sql.DB
	var c *client.Client // client.New(client.Config{...})
	ctx := context.Background()
	d, _ := sqlfence.Postgres("")
	fence := sqlfence.New(d)

	lease, err := c.Acquire(ctx, "scheduler/leader", client.WithTTL(60*time.Second),
		client.WithLoseOnRenewFailure())
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(context.Background())

	transition := func(executionID, from, to string) error {
		tx, err := db.BeginTx(lease.Context(), nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := fence.Advance(lease.Context(), tx, "scheduler/leader", lease.Token()); err != nil {
			return err // sqlfence.ErrStale: 0 rows affected, the lease is lost
		}
		if _, err := tx.ExecContext(lease.Context(),
			`UPDATE executions SET state = $1, lease_epoch = $2 WHERE id = $3 AND state = $4`,
			to, int64(lease.Token()), executionID, from); err != nil {
			return err
		}
		return tx.Commit()
	}
	if err := transition("exec-42", "queued", "running"); errors.Is(err, sqlfence.ErrStale) {
		return // drop leadership: another executor holds the lease now
	}
}
