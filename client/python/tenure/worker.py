"""A placement worker: owns the keys of a group that the cluster's balancer
assigns to it, as the Go client's package client/worker does.

The Go worker announces itself over gossip; this one announces itself with
a presence lease (key ".workers/<id>", held as "<id>#<suffix>", its group,
capacity and prepare time in the lease's metadata): while the lease is held
the worker is a live member of its group, and when it ends (released, or
expired on the leader's clock) the balancer moves its keys. It watches its
targets with a blocking query of the group's assignment, acquires each
target with a blocking acquire (so it gets the key the moment the previous
owner hands it back), runs the handler on a thread of its own while it
holds the key, and hands the key back once the handler returned after the
key moved away. Exclusivity comes from the leases alone: the plan is
intent.

With prepare, it offers warm hand-offs: when the balancer plans to move a
key here from a live worker, it names this worker to prepare the key
first; the worker runs prepare(stop, key) (reads only: no lease and no
token yet) and then tells the cluster, which makes the key its target; the
old owner finishes and hands the key back, and this worker acquires it.
See docs/placement.md, "Warm hand-off".
"""

from __future__ import annotations

import logging
import secrets
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from .durations import format_duration
from .errors import BadRequestError, HeldError, InvalidError, NotFoundError, PermissionDeniedError, TenureError
from .lease import MAX_LOAD, Lease, acquire

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

log = logging.getLogger("tenure.worker")

PRESENCE_PREFIX = ".workers/"
MAX_PREPARE = 600.0  # seconds: the cluster moves a key once this has passed, prepared or not
_FOREVER = float("inf")

Handler = Callable[[threading.Event, str, int], Any]
Preparer = Callable[[threading.Event, str], Any]


def _name_ok(name: str) -> bool:
    return 0 < len(name) <= 256 and all(c.isascii() and (c.isalnum() or c in "._:-") for c in name)


class _Key:
    """A key the worker owns or tries to own: stop ends it (the key moved
    or the worker stops); thread runs _own."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        # work ends the running handler (set when the key moved or its
        # lease ended); None while no handler runs.
        self.work: Optional[threading.Event] = None
        self.lease: Optional[Lease] = None
        self.thread: Optional[threading.Thread] = None


class Worker:
    """Owns the keys of group that the balancer assigns to worker_id.

    handler(stop, key, token) runs on a thread of its own while the worker
    owns key under fencing token; it must return once stop is set (the key
    moved, its lease was lost, or the worker stops), and the worker hands
    the key back after it returned. prepare(stop, key), when given, runs
    before a key moves here from a live worker (at most prepare_time
    seconds, up to 600); an exception from it is logged and the key moves
    here unprepared at once.

    The client's token, when it has one, must be one the worker may serve
    the group with (its holder binding admits "<worker_id>#...", read on
    the group, write on its keys) and write on ".workers/<worker_id>".
    """

    def __init__(self, client: "Client", group: str, handler: Handler, worker_id: Optional[str] = None,
                 capacity: int = 0, ttl: float = 10.0, prepare: Optional[Preparer] = None,
                 prepare_time: float = 0.0, retry: float = 1.0, load_capacity: float = 0.0):
        self.client = client
        self.group = group
        self.handler = handler
        self.id = worker_id or client.holder
        self.capacity = capacity
        self.ttl = ttl
        self.prepare = prepare
        self.prepare_time = prepare_time
        self.retry = retry
        self.load_capacity = load_capacity
        self._loads: Dict[str, float] = {}  # report_load, by key
        self.holder = "%s#%s" % (self.id, secrets.token_hex(4))
        self._mu = threading.Lock()
        self._keys: Dict[str, _Key] = {}
        self._preparing: Dict[str, Tuple[threading.Event, threading.Thread]] = {}
        self._threads: List[threading.Thread] = []

    def _check(self) -> None:
        if not _name_ok(self.group):
            raise ValueError("group %r: 1 to 256 bytes of [A-Za-z0-9._:-]" % (self.group,))
        if not _name_ok(self.id):
            raise ValueError("worker id %r: 1 to 256 bytes of [A-Za-z0-9._:-] (no '#')" % (self.id,))
        if not 0 <= self.load_capacity <= MAX_LOAD:
            raise ValueError("load_capacity %r is outside [0, %g]" % (self.load_capacity, MAX_LOAD))
        if self.capacity < 0:
            raise ValueError("capacity must not be negative, got %r" % (self.capacity,))
        if not isinstance(self.capacity, int):
            raise ValueError("capacity must be an int, got %r" % (self.capacity,))
        if (self.prepare is None) != (self.prepare_time == 0) or not (self.prepare_time == 0 or 0.001 <= self.prepare_time <= MAX_PREPARE):
            raise ValueError("prepare needs a prepare_time in [0.001, %g] seconds, got %r" % (MAX_PREPARE, self.prepare_time))

    def keys(self) -> List[str]:
        """The keys whose handler runs now, sorted."""
        with self._mu:
            return sorted(k for k, st in self._keys.items() if st.lease is not None)

    def presence_metadata(self) -> Dict[str, str]:
        md = {"groups": self.group}
        if self.capacity:
            md["capacity"] = str(self.capacity)
        if self.prepare is not None:
            md["prepare_ms"] = str(int(self.prepare_time * 1000))
        if self.load_capacity:
            md["load_capacity"] = repr(float(self.load_capacity))
        return md

    def report_load(self, key: str, load: float) -> None:
        """Sets the load of key, one of this worker's targets (a level from
        0 to 1e15 in the unit of load_capacity): its renewals report it from
        now on, also under a later lease of the key here. Raises
        InvalidError for a load out of range or a key that is not a target
        of this worker."""
        load = float(load)
        if not 0 <= load <= MAX_LOAD:
            raise InvalidError("report_load: load %r is outside [0, %g]" % (load, MAX_LOAD))
        with self._mu:
            st = self._keys.get(key)
            if st is None or st.stop.is_set():
                raise InvalidError("report_load: %r is not one of this worker's keys" % (key,))
            self._loads[key] = load
            if st.lease is not None:
                st.lease.report_load(load)

    def run(self, stop: threading.Event) -> None:
        """Owns keys until stop is set (noticed within about 5 seconds, or
        the TTL when shorter); then ends its presence lease first, so that
        the balancer moves its keys to other workers, which queue for them,
        stops every handler and prepare, waits for them and hands the keys
        back.

        While another process holds this worker id's presence lease (two
        processes started with one id), it logs so and keeps trying, and
        still takes the id's targets when their leases come free."""
        self._check()
        if self.client.token:
            try:
                self.client.request("POST", "/v1/workers/%s/register" % self.id, {"groups": [self.group]})
            except BadRequestError as e:
                if e.code != "acl_disabled":
                    raise
        presence: Optional[Lease] = None
        index = 0
        held_by_other = False
        try:
            while not stop.is_set():
                if presence is None or not presence.valid():
                    try:
                        presence = acquire(self.client, PRESENCE_PREFIX + self.id, ttl=self.ttl, holder=self.holder,
                                           metadata=self.presence_metadata())
                        held_by_other = False
                        log.info("worker_joined group=%s worker=%s holder=%s", self.group, self.id, self.holder)
                    except HeldError as e:
                        presence = None
                        if not held_by_other:
                            log.warning("presence_held_by_another worker=%s holder=%s note=another process runs under "
                                        "this worker id; retrying", self.id, (e.lease or {}).get("holder"))
                            held_by_other = True
                    except TenureError as e:
                        presence = None
                        log.warning("presence_failed worker=%s error=%s", self.id, e)
                try:
                    plan, prepare, new_index = self._plan(index, wait=self._chunk())
                except TenureError as e:
                    log.debug("watching targets failed group=%s error=%s", self.group, e)
                    stop.wait(self.retry)
                    continue
                if new_index < index:
                    continue  # a server behind the one that answered before: ignore
                index = new_index
                self._reconcile(plan, prepare, stop)
        finally:
            if presence is not None:
                try:
                    presence.release()
                except TenureError as e:
                    log.warning("presence_release_failed worker=%s error=%s", self.id, e)
            self._reconcile({}, {}, stop, ending=True)
            for t in list(self._threads):
                t.join()

    def _chunk(self) -> float:
        """How long one blocking request may wait: stop is noticed within it."""
        return min(self.ttl, 5.0)

    def _plan(self, index: int, wait: float) -> Tuple[Dict[str, str], Dict[str, str], int]:
        """This worker's targets and keys to prepare, all pages, blocking
        on the first until the plan changes past index."""
        plan: Dict[str, str] = {}
        prepare: Dict[str, str] = {}
        cursor = ""
        first = True
        new_index = index
        while True:
            query = {"worker": self.id, "stale": "true", "cursor": cursor}
            w = 0.0
            if first and index > 0:
                w = wait
                query.update(index=str(index), wait=format_duration(w))
            try:
                ans = self.client.request("GET", "/v1/groups/%s/assignment" % self.group, query=query, wait=w)
            except NotFoundError as e:  # no such group (yet): own nothing
                return {}, {}, max(e.index, 1)
            body = ans.body or {}
            if first:
                new_index = max(ans.index or int(body.get("index") or 0), 1)
                first = False
            plan.update(body.get("assignment") or {})
            prepare.update(body.get("prepare") or {})
            cursor = body.get("next") or ""
            if not cursor:
                return plan, prepare, new_index

    def _reconcile(self, plan: Dict[str, str], prepare: Dict[str, str], stop: threading.Event,
                   ending: bool = False) -> None:
        with self._mu:
            ended: Dict[str, threading.Thread] = {}
            for key, (pstop, pthread) in list(self._preparing.items()):
                if ending or key not in prepare:
                    pstop.set()
                    del self._preparing[key]
                    ended[key] = pthread
            for key, st in list(self._keys.items()):
                if ending or key not in plan:
                    st.stop.set()
                    if st.work is not None:
                        st.work.set()
            if ending:
                return
            for key in plan:
                prev = self._keys.get(key)
                if prev is not None and not prev.stop.is_set():
                    continue
                nk = _Key()
                self._keys[key] = nk
                nk.thread = self._start(self._own, key, nk, prev, ended.get(key))
            if self.prepare is not None:
                for key in prepare:
                    if key not in self._preparing:
                        pstop = threading.Event()
                        self._preparing[key] = (pstop, self._start(self._prepare, key, pstop))

    def _start(self, fn: Callable[..., Any], *args: Any) -> threading.Thread:
        t = threading.Thread(target=fn, args=args, name="tenure-worker-%s" % (args[0],), daemon=True)
        self._threads = [x for x in self._threads if x.is_alive()]
        self._threads.append(t)
        t.start()
        return t

    def _own(self, key: str, st: _Key, prev: Optional[_Key], prepared: Optional[threading.Thread]) -> None:
        """Acquires key (waiting for its previous owner to hand it back),
        runs the handler while the lease lasts, hands the key back once it
        moved; acquires again when the lease was lost while the key is
        still a target. It starts once the key's previous thread here and
        its prepare (a prepare that outlasted its time) have ended."""
        if prev is not None and prev.thread is not None:
            prev.thread.join()  # one thread per key at a time
        if prepared is not None:
            prepared.join()
        try:
            while not st.stop.is_set():
                try:
                    lease = acquire(self.client, key, ttl=self.ttl, holder=self.holder,
                                    metadata={"worker": self.id}, wait=_FOREVER, stop=st.stop, wait_chunk=self._chunk())
                except TenureError as e:  # disabled, prohibited, unavailable: the balancer moves it, or the cluster comes back
                    log.debug("acquire failed key=%s error=%s", key, e)
                    st.stop.wait(self.retry)
                    continue
                if lease is None:
                    return
                if st.stop.is_set():  # granted as the key moved away: hand it back unused
                    self._release(key, lease)
                    return
                work = threading.Event()

                def lease_ended(_lease: Lease, w: threading.Event = work) -> None:
                    w.set()
                lease.add_done_callback(lease_ended)
                with self._mu:
                    st.lease, st.work = lease, work
                    if st.stop.is_set():
                        work.set()
                    if key in self._loads:
                        lease.report_load(self._loads[key])
                log.info("key_acquired group=%s worker=%s key=%s token=%d", self.group, self.id, key, lease.token)
                try:
                    self.handler(work, key, lease.token)
                except Exception:  # noqa: BLE001 (the handler's own failure must not end the worker)
                    log.exception("handler_failed key=%s token=%d", key, lease.token)
                work.wait()  # a handler that returned early keeps the key until it moves
                with self._mu:
                    st.lease, st.work = None, None
                if not st.stop.is_set():
                    log.info("key_lost group=%s worker=%s key=%s token=%d error=%s",
                             self.group, self.id, key, lease.token, lease.error)
                self._release(key, lease)
        finally:
            with self._mu:
                if self._keys.get(key) is st:
                    del self._keys[key]
                    self._loads.pop(key, None)

    def _release(self, key: str, lease: Lease) -> None:
        try:
            lease.release()
            log.info("key_released group=%s worker=%s key=%s token=%d", self.group, self.id, key, lease.token)
        except TenureError as e:
            log.warning("key_release_failed key=%s token=%d error=%s note=the key stays held until its lease "
                        "expires (its TTL), then moves", key, lease.token, e)

    def _prepare(self, key: str, stop: threading.Event) -> None:
        """Runs the application's prepare of key, then tells the cluster the
        key may move here (after a failed prepare too: it then moves here
        unprepared at once), until stop is set."""
        try:
            self.prepare(stop, key)  # type: ignore[misc]
        except Exception as e:  # noqa: BLE001
            if stop.is_set():
                return
            log.warning("key_prepare_failed group=%s key=%s error=%s note=the key moves here unprepared", self.group, key, e)
        while not stop.is_set():
            try:
                ans = self.client.request("POST", "/v1/groups/%s/prepared" % self.group,
                                          {"worker": self.id, "keys": [key]})
                moving = key in ((ans.body or {}).get("keys") or [])
                log.info("key_prepared group=%s key=%s moving=%s", self.group, key, moving)
                break
            except (BadRequestError, NotFoundError, PermissionDeniedError) as e:
                log.warning("key_prepared_refused key=%s error=%s", key, e)
                break
            except TenureError as e:
                log.debug("reporting a prepared key failed key=%s error=%s", key, e)
                stop.wait(self.retry)
        with self._mu:
            if self._preparing.get(key, (None,))[0] is stop:
                del self._preparing[key]
