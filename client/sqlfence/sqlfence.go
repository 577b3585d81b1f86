// Package sqlfence makes a SQL database refuse the writes of a superseded
// lease holder: the fencing check at the resource, in the caller's own
// transaction, through database/sql (it imports no driver).
//
// A lease alone cannot make a writer exclusive. A holder that pauses after
// it last checked its lease (a GC pause, a stopped VM, a slow disk) may
// write after its lease has passed to another holder. Only the store can
// refuse that write, by checking the writer's fencing token atomically with
// the write. Tokens of successive holders of a key strictly increase
// (client.Lease.Token), so the store keeps, per resource, the highest token
// it has seen and refuses any lower one.
//
// A Fence keeps those highest tokens in one table, a row per resource:
//
//	CREATE TABLE IF NOT EXISTS tenure_fence (resource TEXT PRIMARY KEY, token BIGINT NOT NULL)
//
// and Advance, run inside the transaction that writes, records the token
// as the resource's highest unless a higher one is recorded:
//
//	INSERT INTO tenure_fence (resource, token) VALUES ($1, $2)
//	ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token
//	WHERE tenure_fence.token <= EXCLUDED.token
//
// One row affected: the writer may go on; its transaction now holds the
// fence row's lock, so a newer holder's Advance waits for it to commit and
// then records its own, higher token. No row affected: a newer holder has
// written, and Advance returns ErrStale; roll the transaction back and stop
// working as the holder (the SQL Server team's rule: "0 rows affected"
// means the lease is lost). Run the transaction at PostgreSQL's default
// isolation, READ COMMITTED: a writer that waited for another's commit on
// the fence row then sees that commit, and is refused if its token is
// lower or goes on if it is higher. Under REPEATABLE READ or SERIALIZABLE
// a writer that waited gets a serialization error instead, whether its
// token is lower or higher: that error refuses nothing for good and says
// nothing of the lease; retry the transaction.
//
// A read-modify-write (read a value, compute, write it back) must also
// call Advance before its read, committed (on the *sql.DB, or in a
// transaction of its own): a superseded holder could otherwise write
// between the new holder's read and its write, and the new holder's write,
// with its higher token, would overwrite it from a stale read. Once the
// new token is recorded, no older holder's write lands.
//
// Postgres gives these statements for PostgreSQL (tested against a real
// server). For another database, build a Dialect from the two statements
// in its dialect; docs/fencing.md gives them for SQL Server.
package sqlfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"regexp"

	"github.com/tenure-io/tenure/client"
)

// ErrStale: a token higher than the writer's is recorded for the resource,
// so a newer holder has written to it; the writer's lease has passed to
// another holder. errors.Is(err, client.ErrStaleToken) holds too.
var ErrStale = fmt.Errorf("sqlfence: %w: a newer holder has written to the resource", client.ErrStaleToken)

// Dialect is the two statements a Fence runs. Advance takes two
// parameters, the resource (text) and the token (a 64-bit integer), in
// that order, and affects one row when it records the token (the
// resource's first, or one at least as high as the recorded one) and none
// when a higher token is recorded. CreateTable makes the table if it does
// not exist.
type Dialect struct {
	CreateTable string
	Advance     string
}

// tableName: an SQL identifier, optionally qualified by a schema.
var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$`)

// Postgres returns the statements for PostgreSQL (9.5 or later) over the
// table named table ("tenure_fence" if empty; letters, digits and
// underscores, optionally schema-qualified).
func Postgres(table string) (Dialect, error) {
	if table == "" {
		table = "tenure_fence"
	}
	if !tableName.MatchString(table) {
		return Dialect{}, fmt.Errorf("sqlfence: table %q: %w: want letters, digits and underscores (schema.table allowed), not starting with a digit", table, client.ErrInvalid)
	}
	return Dialect{
		CreateTable: "CREATE TABLE IF NOT EXISTS " + table + " (resource TEXT PRIMARY KEY, token BIGINT NOT NULL)",
		Advance: "INSERT INTO " + table + " (resource, token) VALUES ($1, $2) " +
			"ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token WHERE " + table + ".token <= EXCLUDED.token",
	}, nil
}

// Execer is what runs a statement: *sql.DB, *sql.Tx and *sql.Conn are.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Fence runs a Dialect's statements. It holds no state of its own and is
// safe for concurrent use.
type Fence struct {
	d Dialect
}

// New returns a Fence that runs d.
func New(d Dialect) *Fence { return &Fence{d: d} }

// CreateTable makes the fence table if it does not exist.
func (f *Fence) CreateTable(ctx context.Context, db Execer) error {
	if _, err := db.ExecContext(ctx, f.d.CreateTable); err != nil {
		return fmt.Errorf("sqlfence: create table: %w", err)
	}
	return nil
}

// Advance records token as resource's highest unless a higher one is
// recorded, and returns ErrStale then. Run it in the transaction of the
// write it guards (tx), before the write: the guarantee holds only for
// writes that commit with it; for a read-modify-write, also before the
// read (see the package documentation). Token must be a lease's token: from 1 to
// math.MaxInt64 (BIGINT's range).
func (f *Fence) Advance(ctx context.Context, tx Execer, resource string, token uint64) error {
	if resource == "" {
		return fmt.Errorf("sqlfence: resource: %w: must not be empty", client.ErrInvalid)
	}
	if token == 0 || token > math.MaxInt64 {
		return fmt.Errorf("sqlfence: token %d: %w: must be from 1 to %d", token, client.ErrInvalid, int64(math.MaxInt64))
	}
	res, err := tx.ExecContext(ctx, f.d.Advance, resource, int64(token))
	if err != nil {
		return fmt.Errorf("sqlfence: advance %q to %d: %w", resource, token, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlfence: advance %q to %d: rows affected: %w", resource, token, err)
	}
	if n == 0 {
		return fmt.Errorf("%w (resource %q, token %d)", ErrStale, resource, token)
	}
	return nil
}

// Write runs write in a new transaction of db guarded by the fence: it
// begins the transaction, calls Advance, then write, and commits. Any
// error rolls the transaction back and is returned: ErrStale when a newer
// holder has written to resource (write was not called), write's own error,
// or the commit's.
func (f *Fence) Write(ctx context.Context, db *sql.DB, resource string, token uint64, write func(*sql.Tx) error) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlfence: begin: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, ignoreDone(tx.Rollback()))
		}
	}()
	if err := f.Advance(ctx, tx, resource, token); err != nil {
		return err
	}
	if err := write(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlfence: commit: %w", err)
	}
	return nil
}

// ignoreDone drops the error of a rollback after the transaction ended.
func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}
