"""Observing elections, following events, groups, lease hooks and the
asyncio interface against the real cluster: see tests/cluster.py."""

from __future__ import annotations

import asyncio
import threading
import time
import unittest
import uuid
from typing import Any, Dict, List, Optional

import tenure
from tenure.aio import AsyncClient

from .cluster import ADDRS, ADMIN_TOKEN, ClusterTest, wait_for


class Observing(ClusterTest):
    def test_observe_follows_leaders_without_polling(self) -> None:
        name = self.key("observe")
        watcher = self.client()
        reads: List[float] = []
        read = watcher.read_lease

        def counted(*args: Any, **kwargs: Any) -> Any:
            reads.append(time.monotonic())
            return read(*args, **kwargs)
        watcher.read_lease = counted  # type: ignore[method-assign]
        seen: List[Optional[Dict[str, Any]]] = []
        stop = threading.Event()
        self.addCleanup(stop.set)
        watcher.election(name).on_leader_change(seen.append, stop, wait=30)
        wait_for("the first report (nobody leads)", lambda: seen == [None], 5.0)

        a, b = self.client(), self.client()
        lead_a = self.track(a.election(name, ttl=5.0).campaign())
        assert lead_a is not None
        wait_for("a reported", lambda: len(seen) == 2, 5.0)
        self.assertEqual((seen[1] or {}).get("holder"), a.holder)
        self.assertEqual((seen[1] or {}).get("token"), lead_a.token)
        quiet = len(reads)
        time.sleep(1.5)
        self.assertLessEqual(len(reads) - quiet, 1, "reads while nothing changed: it polls")

        got: List[tenure.Lease] = []
        t = threading.Thread(target=lambda: got.append(b.election(name, ttl=5.0, wait_chunk=2.0).campaign()))
        t.start()
        time.sleep(0.3)
        a.election(name).resign(lead_a)
        t.join(10.0)
        self.assertTrue(got, "b was not elected")
        self.track(got[0])
        wait_for("b reported", lambda: any(i and i["holder"] == b.holder for i in seen), 5.0)
        self.assertGreater(seen[-1]["token"] if seen[-1] else 0, lead_a.token)


class Events(ClusterTest):
    def test_watch_sees_a_lease_come_and_go(self) -> None:
        c = self.client()
        key = self.key("events")
        _, start = c.events(0, prefix=key)
        got: List[Dict[str, Any]] = []
        stop = threading.Event()
        self.addCleanup(stop.set)

        def watch() -> None:
            for ev in c.watch_events(start, prefix=key, wait=2.0, stop=stop):
                got.append(ev)
        threading.Thread(target=watch, daemon=True).start()
        lease = c.acquire(key, ttl=5.0)
        lease.release()
        wait_for("acquired and released", lambda: len(got) >= 2, 5.0)
        self.assertEqual([(e["type"], e["key"], e["token"]) for e in got[:2]],
                         [("acquired", key, lease.token), ("released", key, lease.token)])
        self.assertLess(got[0]["index"], got[1]["index"])
        evs, _ = c.events(start, types=["released"], prefix=key)
        self.assertEqual([e["type"] for e in evs], ["released"])


class Groups(ClusterTest):
    def test_group_calls(self) -> None:
        admin = self.admin()
        name = "py-" + uuid.uuid4().hex[:8]
        self.addCleanup(admin.delete_group, name)
        admin.put_group(name, keys=["py/g/a", "py/g/b"])
        with self.assertRaises(tenure.APIError):
            admin.put_group(name, keys=["py/g/a"])  # only creates
        first = admin.set_group_keys(name, ["py/g/a", "py/g/c"])
        again = admin.set_group_keys(name, ["py/g/c", "py/g/a"])
        self.assertEqual(first["modify_index"], again["modify_index"], "the same key set changes nothing")
        admin.add_remove_keys(name, add=["py/g/d"], remove=["py/g/a"])
        summary = admin.set_max_per_worker(name, 2)
        g = admin.get_group(name)
        assert g is not None
        self.assertEqual(sorted(k["key"] for k in g["keys"]), ["py/g/c", "py/g/d"])
        self.assertEqual(g["max_per_worker"], 2)
        self.assertIn(name, [s["name"] for s in admin.list_groups()])
        admin.put_group_cas(name, summary["modify_index"], keys=["py/g/e"])
        self.assertTrue(admin.delete_group(name))
        self.assertIsNone(admin.get_group(name))
        key = self.key("controls")
        self.assertTrue(admin.edit_controls(key, disabled=True, force=True)["disabled"])
        self.assertFalse(admin.edit_controls(key, disabled=False)["disabled"])


class Hooks(ClusterTest):
    def test_hooks_of_a_kept_alive_lease(self) -> None:
        c = self.client()
        calls: List[str] = []
        lease = self.track(c.acquire(self.key("hooks"), ttl=1.5, renew_interval=0.2,
                                     on_acquired=lambda l: calls.append("acquired"),
                                     on_renewed=lambda l, latency: calls.append("renewed"),
                                     on_lost=lambda l, err: calls.append("lost")))
        assert lease is not None
        wait_for("renewed twice", lambda: calls.count("renewed") >= 2, 3.0)
        self.assertEqual(calls[0], "acquired")
        self.admin().revoke(lease.key)
        wait_for("lost", lambda: "lost" in calls, 3.0)


@unittest.skipUnless(ADDRS, "no cluster: run by test/integration's TestPythonClient (TENURE_HTTP_ADDR unset)")
class Async(unittest.IsolatedAsyncioTestCase):
    async def test_acquire_lose_and_observe(self) -> None:
        key = "py/aio/" + uuid.uuid4().hex[:8]
        c = AsyncClient(tenure.Client.from_env(holder="py-aio-" + uuid.uuid4().hex[:8], timeout=5.0))
        admin = AsyncClient(tenure.Client.from_env(token=ADMIN_TOKEN or None, timeout=5.0))
        leaders = c.election(key).observe(wait=30)
        self.assertIsNone(await asyncio.wait_for(leaders.__anext__(), 5))
        async with c.acquire(key, ttl=1.5) as lease:
            info = await asyncio.wait_for(leaders.__anext__(), 5)
            self.assertEqual((info or {}).get("token"), lease.token)
            await admin.revoke(key)
            err = await asyncio.wait_for(lease.wait_lost(), 5)
            self.assertIsInstance(err, tenure.LeaseLostError)
        await leaders.aclose()  # type: ignore[attr-defined]


if __name__ == "__main__":
    unittest.main()
