"""The fence adapters (tenure.sqlfence, tenure.redisfence) against a real
PostgreSQL server and a real redis-server, which test/integration's
TestPythonClient starts and names in TENURE_TEST_POSTGRES_DSN and
TENURE_TEST_REDIS_ADDR (with Debian's python3-psycopg2 and python3-redis):
a holder paused past its TTL has its late write refused after another
holder took the key over and wrote. Without a store these skip with "no
store", which TestPythonClient refuses under CI=true."""

from __future__ import annotations

import importlib.util
import os
import unittest
from typing import Any, Tuple

import tenure
from tenure.redisfence import SCRIPT, RedisFence
from tenure.sqlfence import SQLFence

from .cluster import ClusterTest

POSTGRES_DSN = os.environ.get("TENURE_TEST_POSTGRES_DSN", "")
REDIS_ADDR = os.environ.get("TENURE_TEST_REDIS_ADDR", "")

try:
    import psycopg2
except ImportError:  # pragma: no cover
    psycopg2 = None
try:
    import redis
except ImportError:  # pragma: no cover
    redis = None


class Validation(unittest.TestCase):
    def test_sql_fence_checks_its_input(self) -> None:
        for table in ("1t", "t; DROP TABLE x", "a.b.c"):
            with self.assertRaises(tenure.InvalidError, msg=table):
                SQLFence(table)
        with self.assertRaises(tenure.InvalidError):
            SQLFence(paramstyle="named")
        self.assertIn("VALUES (?, ?)", SQLFence(paramstyle="qmark").advance_sql)
        f = SQLFence()
        for resource, token in (("", 1), ("r", 0), ("r", 1 << 63)):
            with self.assertRaises(tenure.InvalidError, msg=(resource, token)):
                f.advance(None, resource, token)

    def test_sql_fence_refuses_what_would_leave_a_write_unfenced(self) -> None:
        class Cursor:
            rowcount = -1

            def execute(self, sql: str, params: Any = None) -> None:
                pass

            def close(self) -> None:
                pass

        class Conn:
            autocommit = True

            def cursor(self) -> Cursor:
                return Cursor()

            def commit(self) -> None:
                raise AssertionError("committed")

            def rollback(self) -> None:
                pass

        f = SQLFence()
        with self.assertRaises(tenure.InvalidError, msg="autocommit"):
            f.write(Conn(), "r", 1, lambda cur: None)
        with self.assertRaises(tenure.InvalidError, msg="no row count"):
            f.advance(Cursor(), "r", 1)

    def test_redis_fence_checks_its_input_and_reads_the_reply(self) -> None:
        class Fake:
            reply: Any = [1, b"OK"]
            got: Tuple[Any, ...] = ()

            def eval(self, script: str, numkeys: int, *keys_and_args: Any) -> Any:
                self.got = (script, numkeys) + keys_and_args
                return self.reply

        r = Fake()
        f = RedisFence(r)
        self.assertEqual(f.do("{s}:fence", 7, ["{s}"], "SET", "v"), b"OK")
        self.assertEqual(r.got, (SCRIPT, 2, "{s}:fence", "{s}", "7", "SET", "v"))
        r.reply = [0, b"9"]
        with self.assertRaises(tenure.StaleTokenError) as cm:
            f.do("{s}:fence", 7, ["{s}"], "SET", "v")
        self.assertEqual(cm.exception.latest, 9)
        for key, token, cmd in (("", 1, "SET"), ("f", 0, "SET"), ("f", 1, "")):
            with self.assertRaises(tenure.InvalidError, msg=(key, token, cmd)):
                f.do(key, token, [], cmd)


_EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "fenced_writes.py")


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("fenced_writes_example", _EXAMPLE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class PausedHolder(ClusterTest):
    def handover(self, name: str) -> Tuple[int, int]:
        """A holder takes a key for 2s and never renews it (paused); another
        waits for it and gets it once the lease expires. Returns the two
        tokens."""
        key = self.key(name)
        paused, _ = self.client().acquire_once(key, ttl=2.0)
        nxt, _ = self.client().acquire_once(key, ttl=60.0, wait=60.0)
        self.assertGreater(nxt["token"], paused["token"])
        return int(paused["token"]), int(nxt["token"])

    @unittest.skipUnless(POSTGRES_DSN and psycopg2, "no store: PostgreSQL (TENURE_TEST_POSTGRES_DSN) "
                         "or psycopg2 missing")
    def test_sql_fence_refuses_a_paused_holder(self) -> None:
        conn = psycopg2.connect(POSTGRES_DSN)
        self.addCleanup(conn.close)
        f = SQLFence("py_fence")
        with conn.cursor() as cur:
            f.create_table(cur)
            cur.execute("CREATE TABLE IF NOT EXISTS py_runs (job TEXT PRIMARY KEY, state TEXT, epoch BIGINT)")
        conn.commit()
        old, new = self.handover("sql")

        def transition(state: str, epoch: int) -> Any:
            def fn(cur: Any) -> int:
                cur.execute("INSERT INTO py_runs VALUES ('job-1', %s, %s) ON CONFLICT (job) "
                            "DO UPDATE SET state = EXCLUDED.state, epoch = EXCLUDED.epoch", (state, epoch))
                return int(cur.rowcount)
            return fn

        self.assertEqual(f.write(conn, "job-1", new, transition("running", new)), 1)
        with self.assertRaises(tenure.StaleTokenError):
            f.write(conn, "job-1", old, transition("failed", old))
        with conn.cursor() as cur:
            cur.execute("SELECT state, epoch FROM py_runs WHERE job = 'job-1'")
            self.assertEqual(cur.fetchone(), ("running", new))
        conn.commit()

    @unittest.skipUnless(POSTGRES_DSN and psycopg2, "no store: PostgreSQL (TENURE_TEST_POSTGRES_DSN) "
                         "or psycopg2 missing")
    def test_executor_example_drops_a_superseded_transition(self) -> None:
        ex = load_example()
        conn = psycopg2.connect(POSTGRES_DSN)
        self.addCleanup(conn.close)
        ex.setup(conn)
        old, new = self.handover("executor")
        self.assertTrue(ex.transition(conn, new, "exec-%d" % new, "none", "queued"))
        self.assertTrue(ex.transition(conn, new, "exec-%d" % new, "queued", "running"))
        self.assertFalse(ex.transition(conn, old, "exec-%d" % new, "running", "failed"))
        with conn.cursor() as cur:
            cur.execute("SELECT state, lease_epoch FROM executions WHERE id = %s", ("exec-%d" % new,))
            self.assertEqual(cur.fetchone(), ("running", new))
        conn.commit()

    @unittest.skipUnless(REDIS_ADDR and redis, "no store: redis-server (TENURE_TEST_REDIS_ADDR) "
                         "or redis-py missing")
    def test_redis_fence_refuses_a_paused_holder(self) -> None:
        host, port = REDIS_ADDR.rsplit(":", 1)
        r = redis.Redis(host=host, port=int(port))
        self.addCleanup(r.close)
        f = RedisFence(r)
        old, new = self.handover("redis")
        fence, session = "{py:session:%d}:fence" % new, "{py:session:%d}" % new
        self.assertEqual(f.do(fence, new, [session], "HSET", "poller", "next"), 1)
        with self.assertRaises(tenure.StaleTokenError):
            f.do(fence, old, [session], "HSET", "poller", "paused")
        self.assertEqual(r.hget(session, "poller"), b"next")
        ex = load_example()
        self.assertTrue(ex.record_poll(r, new, "py-%d" % new))
        self.assertFalse(ex.record_poll(r, old, "py-%d" % new))
        f.advance(fence, new + 1)  # a claim before a read: older tokens are refused from now on
        with self.assertRaises(tenure.StaleTokenError):
            f.do(fence, new, [session], "HSET", "poller", "late")
        self.assertEqual(r.hget(session, "poller"), b"next")


if __name__ == "__main__":
    unittest.main()
