"""Fenced writes from Python, for two of the teams of docs/fencing.md: the
executor that fences each state transition of an execution in PostgreSQL,
and the poller that records each poll of a session in Redis. Each takes the
lease it holds (its .token) and the store's own client (a DB-API
connection, a redis-py client); tests/test_fence_stores.py runs both
against the real stores with a holder paused past its lease.

    with client.acquire("scheduler/leader", ttl=60) as lease:
        if not transition(conn, lease.token, "exec-42", "queued", "running"):
            ...  # the lease is lost: drop leadership
"""

from __future__ import annotations

import time
from typing import Any

import tenure
from tenure.redisfence import RedisFence
from tenure.sqlfence import SQLFence

FENCE = SQLFence("tenure_fence")   # psycopg2's paramstyle ("format")


def setup(conn: Any) -> None:
    """The fence table and the executions table (PostgreSQL)."""
    with conn.cursor() as cur:
        FENCE.create_table(cur)
        cur.execute("CREATE TABLE IF NOT EXISTS executions "
                    "(id TEXT PRIMARY KEY, state TEXT NOT NULL, lease_epoch BIGINT NOT NULL)")
    conn.commit()


def transition(conn: Any, token: int, execution: str, old: str, new: str) -> bool:
    """Moves execution from state old to new under the lease's token, in
    one transaction behind the fence. Returns False when the fence refuses
    the token (the lease has passed to another executor: stop and drop
    leadership); True when the transition was written, or there was none to
    make (the execution was not in state old)."""

    def write(cur: Any) -> None:
        cur.execute("INSERT INTO executions VALUES (%s, %s, %s) ON CONFLICT (id) DO UPDATE "
                    "SET state = EXCLUDED.state, lease_epoch = EXCLUDED.lease_epoch "
                    "WHERE executions.state = %s", (execution, new, token, old))

    try:
        FENCE.write(conn, "scheduler/leader", token, write)
    except tenure.StaleTokenError:
        return False
    return True


def record_poll(redis_client: Any, token: int, session: str) -> bool:
    """Records a poll of session under the lease's token. Returns False
    when the fence refuses the token (another poller owns the session)."""
    fence = RedisFence(redis_client)
    tag = "{session:%s}" % session   # one hash tag: one slot on Redis Cluster
    try:
        fence.do(tag + ":fence", token, [tag], "HSET", "last_poll", str(time.time()))
    except tenure.StaleTokenError:
        return False
    return True
