"""The placement worker (tenure.Worker) against a real three-node cluster
with TLS and ACLs on: see tests/cluster.py."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Dict, List, Tuple

import tenure

from .cluster import ClusterTest, wait_for


class Runs:
    """Records every handler run and every prepare, on one monotonic clock."""

    def __init__(self) -> None:
        self.mu = threading.Lock()
        self.runs: Dict[str, List[List]] = {}  # key -> [[worker, token, start, end]]
        self.prepared: Dict[str, List[Tuple[str, float]]] = {}  # key -> [(worker, end)]

    def handler(self, worker: str):
        def handle(stop: threading.Event, key: str, token: int) -> None:
            run = [worker, token, time.monotonic(), 0.0]
            with self.mu:
                self.runs.setdefault(key, []).append(run)
            stop.wait()
            time.sleep(0.05)  # the last of the work, e.g. a flush
            with self.mu:
                run[3] = time.monotonic()
        return handle

    def preparer(self, worker: str):
        def prepare(stop: threading.Event, key: str) -> None:
            if stop.wait(0.3):
                raise RuntimeError("called off")
            with self.mu:
                self.prepared.setdefault(key, []).append((worker, time.monotonic()))
        return prepare

    def running(self, worker: str) -> List[str]:
        with self.mu:
            return sorted(k for k, rs in self.runs.items() if rs and rs[-1][0] == worker and rs[-1][3] == 0.0)


class Workers(ClusterTest):
    def start(self, w: tenure.Worker) -> threading.Event:
        stop = threading.Event()
        t = threading.Thread(target=w.run, args=(stop,), daemon=True)
        t.start()

        def end() -> None:
            stop.set()
            t.join(30)
            self.assertFalse(t.is_alive(), "Worker.run did not return after stop")
        self.addCleanup(end)
        return stop

    def test_warm_hand_off(self) -> None:
        """A worker holds every key of a group; a second one joins with
        prepare: each key that moves to it is prepared first, while the
        first worker's handler still runs, and no key ever runs twice at
        once; tokens grow. Stopping a worker hands its keys back."""
        admin = self.admin()
        group = "py-g-" + uuid.uuid4().hex[:8]
        prefix = "py/%s/" % group
        admin.put_group(group, prefix=prefix, count=4)
        self.addCleanup(lambda: admin.delete_group(group))
        runs = Runs()
        a_id, b_id = "py-wa-" + uuid.uuid4().hex[:6], "py-wb-" + uuid.uuid4().hex[:6]
        a = tenure.Worker(self.client(), group, runs.handler(a_id), worker_id=a_id, ttl=4.0)
        stop_a = self.start(a)
        wait_for("a owns all 4 keys", lambda: len(a.keys()) == 4, 30)
        b = tenure.Worker(self.client(), group, runs.handler(b_id), worker_id=b_id, ttl=4.0,
                          prepare=runs.preparer(b_id), prepare_time=60.0, load_capacity=50.0)
        self.start(b)
        wait_for("a and b own 2 keys each", lambda: len(a.keys()) == 2 and len(b.keys()) == 2 and
                 sorted(runs.running(a_id) + runs.running(b_id)) == sorted(prefix + str(i) for i in range(4)), 30)
        with runs.mu:
            for key in b.keys():
                (wa, ta, sa, ea), (wb, tb, sb, _) = runs.runs[key][-2:]
                self.assertEqual((wa, wb), (a_id, b_id), key)
                self.assertGreater(tb, ta, "%s: tokens grow" % key)
                self.assertGreaterEqual(sb, ea, "%s: b's handler started before a's returned" % key)
                prepared = [t for w, t in runs.prepared.get(key, []) if w == b_id]
                self.assertTrue(prepared and sa <= prepared[-1] <= ea,
                                "%s: b did not prepare it while a ran it (prepared %r, a ran %r-%r)" % (key, prepared, sa, ea))
        # Load reports ride on b's renewals: the leader's group view shows
        # the key's load and b's announced capacity.
        hot = b.keys()[0]
        b.report_load(hot, 7.0)
        with self.assertRaises(tenure.InvalidError):
            b.report_load(hot, -1.0)
        with self.assertRaises(tenure.InvalidError):
            b.report_load(a.keys()[0], 1.0)

        def shown() -> bool:
            g = admin.get_group(group) or {}
            loads = {k["key"]: k.get("load") for k in g.get("keys", [])}
            caps = {w["id"]: w.get("load_capacity") for w in g.get("workers", [])}
            return loads.get(hot) == 7.0 and caps.get(b_id) == 50.0
        wait_for("the group view shows b's load report and capacity", shown, 30)
        stop_a.set()
        wait_for("b owns all 4 keys once a stopped", lambda: len(b.keys()) == 4, 30)
        self.assertEqual(a.keys(), [])
        presence = admin.get_lease(tenure.PRESENCE_PREFIX + a_id)
        self.assertEqual(presence["state"], "free", "a's presence lease ended")

    def test_bad_settings(self) -> None:
        c = self.client()
        for kwargs in ({"worker_id": "bad#id"}, {"capacity": -1}, {"prepare": lambda s, k: None},
                       {"prepare": lambda s, k: None, "prepare_time": 601.0}):
            w = tenure.Worker(c, "g", lambda s, k, t: None, **kwargs)
            with self.assertRaises(ValueError, msg=repr(kwargs)):
                w.run(threading.Event())
