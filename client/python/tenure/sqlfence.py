"""Fencing at a SQL store: refuse, in the writer's own transaction, the
writes of a holder whose lease has passed to another (standard library
only; give it your driver's DB-API connection or cursor).

A lease alone cannot make a writer exclusive: a holder that pauses after
it last checked its lease (a GC pause, a stopped VM) may write after the
lease has passed to another holder. Tokens of successive holders of a key
strictly increase, so the store keeps the highest token it has seen per
resource, in one table, and refuses any lower one atomically with the
write:

    CREATE TABLE IF NOT EXISTS tenure_fence (resource TEXT PRIMARY KEY, token BIGINT NOT NULL)

    INSERT INTO tenure_fence (resource, token) VALUES (%s, %s)
    ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token
    WHERE tenure_fence.token <= EXCLUDED.token

One row affected: the write may go on, and the transaction holds the fence
row until it ends. No row affected: a newer holder has written, and
advance raises StaleTokenError; roll back and stop working as the holder.
Use READ COMMITTED (PostgreSQL's default): under REPEATABLE READ or
SERIALIZABLE a writer that waited for another's commit gets a
serialization error whatever its token; retry then.
A read-modify-write must also advance before its read (committed), so
that no superseded holder writes between the new holder's read and its
write. These are PostgreSQL's statements (the same as the Go client's sqlfence);
for another database pass advance_sql and create_sql in its dialect
(docs/fencing.md gives SQL Server's).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Optional, TypeVar

from .errors import InvalidError, StaleTokenError

_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$")
_PLACEHOLDERS = {"format": "%s", "pyformat": "%s", "qmark": "?"}
_MAX_TOKEN = (1 << 63) - 1

T = TypeVar("T")


class SQLFence:
    """The fence table's statements, for one DB-API paramstyle.

    table: the fence table ("tenure_fence"; letters, digits, underscores,
    optionally schema-qualified). paramstyle: your driver's ("format" for
    psycopg2 and psycopg, "qmark" for others). advance_sql and create_sql
    replace PostgreSQL's statements (advance_sql takes the resource, then
    the token, and affects one row when it records the token, none when a
    higher one is recorded). Holds no state; safe to share."""

    def __init__(self, table: str = "tenure_fence", paramstyle: str = "format",
                 advance_sql: Optional[str] = None, create_sql: Optional[str] = None):
        if not _TABLE.match(table):
            raise InvalidError("table %r: want letters, digits and underscores (schema.table allowed), "
                               "not starting with a digit" % (table,))
        if paramstyle not in _PLACEHOLDERS and advance_sql is None:
            raise InvalidError("paramstyle %r: want one of %s, or give advance_sql"
                               % (paramstyle, ", ".join(sorted(_PLACEHOLDERS))))
        p = _PLACEHOLDERS.get(paramstyle, "%s")
        self.create_sql = create_sql or (
            "CREATE TABLE IF NOT EXISTS %s (resource TEXT PRIMARY KEY, token BIGINT NOT NULL)" % table)
        self.advance_sql = advance_sql or (
            "INSERT INTO %s (resource, token) VALUES (%s, %s) ON CONFLICT (resource) "
            "DO UPDATE SET token = EXCLUDED.token WHERE %s.token <= EXCLUDED.token" % (table, p, p, table))

    def create_table(self, cursor: Any) -> None:
        """Makes the fence table if it does not exist (commit is yours)."""
        cursor.execute(self.create_sql)

    def advance(self, cursor: Any, resource: str, token: int) -> None:
        """Records token as resource's highest unless a higher one is
        recorded, and raises StaleTokenError then. Run it on the cursor of
        the transaction that writes, before the write."""
        if not resource:
            raise InvalidError("resource must not be empty")
        if not 1 <= token <= _MAX_TOKEN:
            raise InvalidError("token %r must be from 1 to %d" % (token, _MAX_TOKEN))
        cursor.execute(self.advance_sql, (resource, token))
        if cursor.rowcount < 0:
            raise InvalidError("the driver reports no row count (rowcount %r): sqlfence cannot tell a "
                               "refused token from a recorded one" % (cursor.rowcount,))
        if cursor.rowcount == 0:
            raise StaleTokenError(resource, token, 0, "stale fencing token %d for %r: a newer holder "
                                  "has written to it" % (token, resource))

    def write(self, conn: Any, resource: str, token: int, fn: Callable[[Any], T]) -> T:
        """Runs fn(cursor) in a transaction of conn guarded by the fence:
        advance, then fn, then commit; any error rolls back and is raised
        (StaleTokenError when a newer holder has written: fn was not
        called). Returns what fn returns."""
        if getattr(conn, "autocommit", False):
            # Each statement would commit on its own: the fence row would
            # be released before fn writes, and fn's write would be unfenced.
            raise InvalidError("conn is in autocommit mode: SQLFence.write needs a transaction")
        cur = conn.cursor()
        try:
            self.advance(cur, resource, token)
            out = fn(cur)
            conn.commit()
            return out
        except BaseException:
            conn.rollback()
            raise
        finally:
            cur.close()
