"""Leader election on a lease key: the leader is the holder of the key, so
at most one process leads at a time and each leadership has its own
fencing token."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, Optional

from .errors import BadRequestError, InvalidError, TenureError
from .lease import Lease, _transient, acquire

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
        try:
            lease = acquire(self.client, self.key, ttl=self.ttl, holder=self.holder, metadata=self.metadata,
                            wait=_FOREVER, margin=self.margin, stop=stop, wait_chunk=self.wait_chunk,
                            election=self.name)
        except TenureError as e:
            log.error("leader_acquire_failed election=%s key=%s retrying=false error=%s", self.name, self.key, e)
            raise
        if lease is not None:
            log.info("leader_acquired election=%s key=%s holder=%s token=%d ttl=%g",
                     self.name, self.key, lease.holder, lease.token, lease.ttl)
        return lease

    def resign(self, lease: Lease) -> None:
        """Releases the leadership lease, so that a standby is elected at
        once (idempotent, as Lease.release); logs leader_resigned when it
        was still leading."""
        leading = lease.valid()
        lease.release()
        if leading:
            log.info("leader_resigned election=%s key=%s holder=%s token=%d",
                     self.name, self.key, lease.holder, lease.token)

    def observe(self, stop: Optional[threading.Event] = None,
                wait: float = 300.0) -> Iterator[Optional[Dict[str, Any]]]:
        """Follows the election's leader: yields the current one first,
        then each new leader, and None each time the election is left
        without one. A leader is a dict {"holder", "token", "metadata"}.
        It reads the key with blocking reads (each of at most wait
        seconds) that the cluster answers only when the key changed, so it
        sends nothing while nothing changes; a leader that ends before it
        is read may be missed, never the latest one. Transient failures
        are retried with the client's backoff. It ends when stop is set
        (noticed within wait seconds, at once after each change); a
        refused query (InvalidError, BadRequestError) is raised."""
        index = 0
        last: Optional[Dict[str, Any]] = None
        sent = False
        failures = 0
        while stop is None or not stop.is_set():
            try:
                cur, nxt = self.client.read_lease(self.key, index=index, wait=wait)
            except TenureError as e:
                if isinstance(e, (InvalidError, BadRequestError)) or not _transient(e):
                    log.error("observing the election failed election=%s key=%s error=%s", self.name, self.key, e)
                    raise
                failures += 1
                log.debug("observing the election failed, retrying election=%s error=%s", self.name, e)
                if _pause(stop, self.client.backoff(failures, getattr(e, "retry_after", 0.0))):
                    return
                continue
            failures = 0
            if nxt == 0 and _pause(stop, self.client.retry_max_delay):
                return  # no index to block on: wait rather than spin
            index = nxt
            info = leader_info(cur)
            if sent and _same(info, last):
                continue
            last, sent = info, True
            yield info

    def on_leader_change(self, fn: Callable[[Optional[Dict[str, Any]]], Any],
                         stop: threading.Event, wait: float = 300.0) -> threading.Thread:
        """Calls fn(leader) on a daemon thread for each leader observe
        yields, until stop is set; returns the started thread. An
        exception of fn is logged and the observing goes on."""
        def follow() -> None:
            try:
                for info in self.observe(stop, wait):
                    try:
                        fn(info)
                    except Exception:
                        log.exception("on_leader_change callback failed")
            except TenureError:
                pass  # logged by observe
        t = threading.Thread(target=follow, name="tenure-observe-%s" % self.name, daemon=True)
        t.start()
        return t

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
        stop_all = stop if stop is not None else threading.Event()
        while not stop_all.is_set():
            got = self.campaign(stop_all)
            if got is None:
                return
            lease = got
            stop_work = threading.Event()
            lease.add_done_callback(lambda _l: stop_work.set())
            ended = threading.Event()

            def watch() -> None:
                # Ends the work on stop, and on the deadline even if the
                # keep-alive thread is late to notice it.
                while not ended.is_set() and not stop_work.is_set():
                    if stop_all.wait(0.02) or not lease.valid():
                        stop_work.set()

            watcher = threading.Thread(target=watch, name="tenure-election-%s" % self.name, daemon=True)
            watcher.start()
            try:
                fn(lease, stop_work)
            finally:
                ended.set()
                stop_work.set()
                watcher.join()
                try:
                    self.resign(lease)
                except TenureError as e:
                    log.warning("resign failed; the lease will expire: election=%s token=%d error=%s",
                                self.name, lease.token, e)
            if once:
                return


def leader_info(lease: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The leader of an election whose key reads lease: {"holder", "token",
    "metadata"}, or None when the key is free or was never acquired."""
    if lease is None or lease.get("state") != "held":
        return None
    return {"holder": lease.get("holder", ""), "token": int(lease.get("token") or 0),
            "metadata": dict(lease.get("metadata") or {})}


def _same(a: Optional[Dict[str, Any]], b: Optional[Dict[str, Any]]) -> bool:
    if a is None or b is None:
        return a is b
    return (a["holder"], a["token"]) == (b["holder"], b["token"])


def _pause(stop: Optional[threading.Event], seconds: float) -> bool:
    """Sleeps seconds, or until stop is set; True when stop is set."""
    if stop is None:
        time.sleep(seconds)
        return False
    return stop.wait(seconds)
