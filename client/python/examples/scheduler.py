#!/usr/bin/env python3
"""A scheduler with hot standbys, on tenure.

Run several replicas; one leads and places instances on nodes, the others
stand by, queued on the cluster for the election key. The leader puts its
fencing token on every placement it writes, and the placement store refuses
a token below the highest it has seen, so a leader that was paused past its
lease (GC, a VM migration) and wakes up cannot overwrite what its successor
decided. When the leader stops it resigns: a standby leads within
milliseconds; when it dies, within one TTL.

    export TENURE_HTTP_ADDR=127.0.0.1:7500,127.0.0.1:7510,127.0.0.1:7520
    python3 examples/scheduler.py --id sched-a &
    python3 examples/scheduler.py --id sched-b &   # stands by; kill sched-a and it leads

With TLS and ACLs, also TENURE_CACERT (TENURE_CLIENT_CERT, TENURE_CLIENT_KEY)
and TENURE_HTTP_TOKEN, as for the CLI.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import zlib
from typing import Callable, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import tenure  # noqa: E402

log = logging.getLogger("scheduler")

ELECTION = "ccm/scheduler/leader"


class PlacementStore:
    """Where placements are written: instance -> (node, token of the
    scheduler that wrote it). A stand-in for the team's database: the
    fencing check and the write happen under one lock, as they would in one
    transaction (UPDATE placements SET node=$1, token=$2 WHERE ... AND
    $2 >= (SELECT max token ...)). Shared by the replicas of one process in
    the tests; a real deployment shares the database."""

    def __init__(self, instances: List[str], nodes: List[str]):
        self.nodes = list(nodes)
        self._mu = threading.Lock()
        self._fence = tenure.FenceValidator()  # the highest token seen per election key
        self._pending = list(instances)
        self.placements: Dict[str, Tuple[str, int]] = {}
        self.writes: List[Tuple[str, str, int]] = []  # (instance, node, token) in order

    def pending(self) -> List[str]:
        with self._mu:
            return list(self._pending)

    def add(self, instance: str) -> None:
        with self._mu:
            self._pending.append(instance)

    def place(self, fence_key: str, token: int, instance: str, node: str) -> None:
        """Writes a placement; raises tenure.StaleTokenError when a newer
        scheduler has written since (its token is higher)."""
        with self._mu:
            self._fence.check(fence_key, token)
            self.placements[instance] = (node, token)
            self.writes.append((instance, node, token))
            if instance in self._pending:
                self._pending.remove(instance)


class Scheduler:
    """One replica. run(stop) campaigns until stop is set; while it leads,
    it places every pending instance each tick."""

    def __init__(self, client: tenure.Client, instance_id: str, store: PlacementStore,
                 ttl: float = 15.0, election: str = ELECTION, tick: float = 1.0,
                 on_lead: Optional[Callable[[str, int], None]] = None):
        self.client = client
        self.instance_id = instance_id
        self.store = store
        self.tick = tick
        self.on_lead = on_lead
        # The client's holder is this replica's identity on the cluster.
        self.election = client.election(election, ttl=ttl, metadata={"scheduler": instance_id},
                                         wait_chunk=min(5.0, ttl))

    def choose(self, instance: str) -> str:
        """The placement algorithm (here: a stable hash over the nodes)."""
        return self.store.nodes[zlib.crc32(instance.encode()) % len(self.store.nodes)]

    def lead(self, lease: tenure.Lease, stop_work: threading.Event) -> None:
        log.info("%s leads with token %d", self.instance_id, lease.token)
        if self.on_lead is not None:
            self.on_lead(self.instance_id, lease.token)
        while not stop_work.is_set():
            for instance in self.store.pending():
                if not lease.valid():  # checked right before each write
                    break
                try:
                    self.store.place(lease.key, lease.token, instance, self.choose(instance))
                except tenure.StaleTokenError as e:
                    log.warning("%s was superseded: %s", self.instance_id, e)
                    return
            stop_work.wait(self.tick)
        log.info("%s stops leading: %s", self.instance_id, lease.error)

    def run(self, stop: threading.Event) -> None:
        self.election.run(self.lead, stop=stop)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--id", default=tenure.new_holder_id(), help="this replica's holder id")
    p.add_argument("--ttl", type=float, default=15.0, help="lease TTL, seconds: the longest a dead leader goes unreplaced")
    p.add_argument("--election", default=ELECTION)
    p.add_argument("--duration", type=float, default=0.0, help="stop after this many seconds (0: on SIGINT/SIGTERM)")
    args = p.parse_args(argv)

    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGTERM, signal.SIGINT)}
    timer = threading.Timer(args.duration, stop.set)
    if args.duration > 0:
        timer.start()
    store = PlacementStore(["instance-%d" % i for i in range(10)], ["node-a", "node-b", "node-c"])
    sched = Scheduler(tenure.Client.from_env(holder=args.id), args.id, store, ttl=args.ttl, election=args.election)
    try:
        sched.run(stop)
    finally:
        timer.cancel()
        for s, h in previous.items():
            signal.signal(s, h)
    for instance, (node, token) in sorted(store.placements.items()):
        print("%s -> %s (token %d)" % (instance, node, token))
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    sys.exit(main())
