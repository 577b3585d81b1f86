"""Leader election on a lease key: the leader is the holder of the key, so
at most one process leads at a time and each leadership has its own
fencing token."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional

from .errors import TenureError
from .lease import Lease, acquire

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

log = logging.getLogger("tenure.election")

_FOREVER = float("inf")


def election_key(name: str) -> str:
    """The lease key of election name: "elections/<name>", or name itself
    when it contains a slash (as the Go client's ElectionKey)."""
    return name if "/" in name else "elections/" + name


class Election:
    """Campaigns for one election. Candidates in one process need distinct
    holders: the cluster treats an acquisition by the holder that leads,
    under the client's lease secret, as a retry."""

    def __init__(self, client: "Client", name: str, ttl: float = 10.0, holder: Optional[str] = None,
                 metadata: Optional[Dict[str, str]] = None, margin: Optional[float] = None,
                 wait_chunk: float = 5.0):
        self.client = client
        self.name = name
        self.key = election_key(name)
        self.ttl = ttl
        self.holder = holder or client.holder
        self.metadata = metadata
        self.margin = margin
        self.wait_chunk = wait_chunk

    def campaign(self, stop: Optional[threading.Event] = None) -> Optional[Lease]:
        """Blocks until this process leads and returns its lease, queued on
        the cluster behind the current leader (blocking acquires of
        wait_chunk seconds, so that stop is noticed within one), retrying
        transient failures. Returns None when stop is set first."""
        return acquire(self.client, self.key, ttl=self.ttl, holder=self.holder, metadata=self.metadata,
                       wait=_FOREVER, margin=self.margin, stop=stop, wait_chunk=self.wait_chunk)

    def leader(self) -> Optional[Dict[str, Any]]:
        """The current leader's lease (linearizable read), or None when
        nobody leads."""
        cur = self.client.get_lease(self.key)
        if cur is None or cur.get("state") != "held":
            return None
        return cur

    def run(self, fn: Callable[[Lease, threading.Event], Any], stop: Optional[threading.Event] = None,
            once: bool = False) -> None:
        """Campaigns, and once elected calls fn(lease, stop_work) on this
        thread. stop_work is a threading.Event set the moment leadership is
        lost (a refused renewal, or the local deadline passing) or stop is
        set: fn must return soon after. When fn returns, the leadership is
        resigned (released), so a standby takes over at once, and the
        campaign starts again, unless stop is set or once is true. An
        exception of fn is raised after the resignation. Put lease.token
        on every write fn makes."""
        stop = stop if stop is not None else threading.Event()
        while not stop.is_set():
            lease = self.campaign(stop)
            if lease is None:
                return
            stop_work = threading.Event()
            lease.add_done_callback(lambda _l: stop_work.set())
            ended = threading.Event()

            def watch() -> None:
                # Ends the work on stop, and on the deadline even if the
                # keep-alive thread is late to notice it.
                while not ended.is_set() and not stop_work.is_set():
                    if stop.wait(0.02) or not lease.valid():
                        stop_work.set()

            watcher = threading.Thread(target=watch, name="tenure-election-%s" % self.name, daemon=True)
            watcher.start()
            log.info("leader_established election=%s holder=%s token=%d", self.name, lease.holder, lease.token)
            try:
                fn(lease, stop_work)
            finally:
                ended.set()
                stop_work.set()
                watcher.join()
                try:
                    lease.release()
                except TenureError as e:
                    log.warning("resign failed; the lease will expire: election=%s token=%d error=%s",
                                self.name, lease.token, e)
                log.info("leader_lost election=%s holder=%s token=%d", self.name, lease.holder, lease.token)
            if once:
                return
