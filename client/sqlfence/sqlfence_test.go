package sqlfence

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client"
)

func TestPostgresNamesTheTable(t *testing.T) {
	d, err := Postgres("")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.CreateTable, "tenure_fence") || !strings.Contains(d.Advance, "tenure_fence.token <= EXCLUDED.token") {
		t.Fatalf("default table: %+v", d)
	}
	if d, err = Postgres("app.fence_1"); err != nil || !strings.Contains(d.Advance, "INSERT INTO app.fence_1 ") {
		t.Fatalf("schema-qualified table: %+v %v", d, err)
	}
	for _, bad := range []string{"1t", "t; DROP TABLE x", "a.b.c", "t-1", `"t"`} {
		if _, err := Postgres(bad); !errors.Is(err, client.ErrInvalid) || !strings.Contains(err.Error(), "table") {
			t.Errorf("Postgres(%q) = %v, want ErrInvalid naming the table", bad, err)
		}
	}
}

// execer records the statements it is given and answers with rows.
type execer struct {
	rows  int64
	query string
	args  []any
}

func (e *execer) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	e.query, e.args = query, args
	return driverResult(e.rows), nil
}

type driverResult int64

func (r driverResult) LastInsertId() (int64, error) { return 0, nil }
func (r driverResult) RowsAffected() (int64, error) { return int64(r), nil }

func TestAdvanceReadsNoRowAsStale(t *testing.T) {
	d, _ := Postgres("")
	f := New(d)
	ctx := context.Background()
	e := &execer{rows: 1}
	if err := f.Advance(ctx, e, "r", 7); err != nil || e.query != d.Advance || e.args[0] != "r" || e.args[1] != int64(7) {
		t.Fatalf("Advance = %v; ran %q %v", err, e.query, e.args)
	}
	e.rows = 0
	if err := f.Advance(ctx, e, "r", 7); !errors.Is(err, ErrStale) || !errors.Is(err, client.ErrStaleToken) {
		t.Fatalf("no row affected: %v, want ErrStale", err)
	}
	for _, tc := range []struct {
		resource string
		token    uint64
		field    string
	}{{"", 1, "resource"}, {"r", 0, "token"}, {"r", math.MaxInt64 + 1, "token"}} {
		if err := f.Advance(ctx, e, tc.resource, tc.token); !errors.Is(err, client.ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Advance(%q, %d) = %v, want ErrInvalid naming %s", tc.resource, tc.token, err, tc.field)
		}
	}
}
