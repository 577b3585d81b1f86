"""The scheduler example of docs/jobs.md (examples/scheduler.py) against the
cluster: two replicas, one leads and places instances with its fencing
token; when it stops, the standby takes over, and the leader that stopped
cannot write any more."""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from typing import Any, List, Tuple

import tenure

from .cluster import ClusterTest, wait_for

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "scheduler.py")


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("scheduler_example", _PATH)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


class SchedulerExample(ClusterTest):
    def test_standby_takes_over_and_stale_writes_are_refused(self) -> None:
        sched = load_example()
        store = sched.PlacementStore(["instance-%d" % i for i in range(5)], ["node-a", "node-b"])
        election = self.key("scheduler")
        leads: List[Tuple[str, int]] = []
        stops = {"a": threading.Event(), "b": threading.Event()}
        threads = {}
        for label in ("a", "b"):
            s = sched.Scheduler(self.client(holder=self.holder("sched-" + label)), "sched-" + label, store,
                                ttl=1.5, election=election, tick=0.1,
                                on_lead=lambda who, token: leads.append((who, token)))
            threads[label] = threading.Thread(target=s.run, args=(stops[label],), daemon=True)
            threads[label].start()
        wait_for("every instance placed", lambda: not store.pending(), 10.0)
        first_who, first_token = leads[0]
        self.assertEqual(len(leads), 1, "two schedulers led at once: %r" % leads)
        # Stop the leader: it resigns, the standby leads at once.
        stops[first_who[-1]].set()
        wait_for("the standby leads", lambda: len(leads) == 2, 8.0)
        second_who, second_token = leads[1]
        self.assertNotEqual(second_who, first_who)
        self.assertGreater(second_token, first_token)
        store.add("instance-new")
        wait_for("the new leader places new work", lambda: "instance-new" in store.placements, 5.0)
        self.assertEqual(store.placements["instance-new"][1], second_token)
        # The old leader, paused and woken up, writes with its old token.
        with self.assertRaises(tenure.StaleTokenError):
            store.place(tenure.election_key(election), first_token, "instance-0", "node-a")
        stops[second_who[-1]].set()
        for t in threads.values():
            t.join(5.0)
            self.assertFalse(t.is_alive(), "a scheduler did not stop")
        tokens = [w[2] for w in store.writes]
        self.assertEqual(tokens, sorted(tokens), "placements went back to an older token")

    def test_example_runs_as_a_program(self) -> None:
        sched = load_example()
        out = sched.main(["--id", self.holder("cli"), "--ttl", "1.5", "--election", self.key("scheduler-cli"),
                          "--duration", "1.5"])
        self.assertEqual(out, 0)
