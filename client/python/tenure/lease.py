"""Kept-alive leases with a local deadline.

The safety argument (DESIGN.md): the cluster never frees a lease before TTL
has passed since its holder *sent* the last acquire or renewal that
succeeded. So the holder counts from the monotonic time taken just before
that request was sent, and stops treating itself as holder at

    sent_at + TTL - margin

(local_deadline), the margin covering clock-rate differences, timer delay
and the time the application needs to notice. A lease whose deadline passes
is lost even if a renewal is still in flight; a late successful answer does
not revive it.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from .durations import parse_duration
from .errors import (APIError, BadRequestError, DuplicateLeaseError, HeldError, InvalidError, LeaseExpiredLocally,
                     LeaseLostError, ReleasedError, RenewFailedError, TenureError, UnavailableError, WrongSecretError)

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

log = logging.getLogger("tenure.lease")

MIN_MARGIN = 0.1
"""The smallest default margin (seconds): timer and scheduling latency."""

CLEANUP_TIMEOUT = 3.0
"""Bounds the best-effort release of a lease nobody will use."""

_OPERATOR_REASONS = ("revoked", "disabled", "prohibited")


MAX_LOAD = 1e15  # the largest load a renewal may report (the server's wire.MaxLoad)


def default_margin(ttl: float) -> float:
    """The margin of a lease of ttl seconds: ttl/10, at least 100ms, at
    most ttl/2 (the Go client's DefaultMargin)."""
    return min(max(ttl / 10.0, MIN_MARGIN), ttl / 2.0)


def local_deadline(sent_at: float, ttl: float, margin: float) -> float:
    """The instant (time.monotonic()) until which the holder may act:
    the send time of the last successful acquire or renewal + ttl - margin."""
    return sent_at + ttl - margin


def renew_interval(ttl: float) -> float:
    """Renewals are due every ttl/3 (then scaled by a jitter of +-10%)."""
    return ttl / 3.0


def retry_delay(interval: float, failures: int) -> float:
    """The pause before renewing again after the n-th transient failure in
    a row: interval/8, doubling, from 10ms to 1s."""
    d: float = interval / 8.0 * (2 ** min(failures - 1, 3))
    return min(max(d, 0.01), 1.0)


def _transient(err: BaseException) -> bool:
    if isinstance(err, APIError):
        return err.transient
    return isinstance(err, (UnavailableError, OSError))


def _outcome_unknown(err: BaseException) -> bool:
    if isinstance(err, APIError):
        return err.status >= 500 and err.code != "no_leader"
    return True


class Lease:
    """A lease kept alive by a daemon thread, renewing every TTL/3 (+-10%)
    until it is lost or released.

    Attributes: key, holder, token (the fencing token: send it with every
    write made under the lease), ttl (seconds, as granted), margin,
    metadata, info (the lease as the cluster last answered it).

    The lease is lost at the first of: a refused renewal (LeaseLostError
    with its reason: expired, revoked, superseded, ...), or its local
    deadline (local_deadline of the last successful acquire or renewal)
    passing without a successful renewal (LeaseExpiredLocally), even while
    renewals are being retried. Then valid() is False, error says why,
    the threading.Event done is set and on_lost(lease, error) is called
    once (on the keep-alive thread, or on the thread that noticed the
    deadline in valid()). release() also sets done (error is then a
    ReleasedError) but does not call on_lost.

    Use it as a context manager to release it on exit. Safe for concurrent
    use.
    """

    def __init__(self, client: "Client", key: str, holder: str, info: Dict[str, Any],
                 ttl: float, margin: float, sent_at: float,
                 on_lost: Optional[Callable[["Lease", BaseException], Any]] = None,
                 renew_now: bool = False, interval: Optional[float] = None,
                 on_renewed: Optional[Callable[["Lease", float], Any]] = None,
                 on_renew_failed: Optional[Callable[["Lease", BaseException], Any]] = None,
                 lose_on_renew_failure: bool = False, election: str = ""):
        self.client = client
        self.key = key
        self.holder = holder
        self.token = int(info.get("token", 0))
        self.ttl = ttl
        self.margin = margin
        self.interval = interval if interval is not None else renew_interval(ttl)
        self.metadata = dict(info.get("metadata") or {})
        self.info = info
        self.done = threading.Event()
        self._on_lost = on_lost
        self._on_renewed = on_renewed
        self._on_renew_failed = on_renew_failed
        self._strict = lose_on_renew_failure
        self.election = election
        self._callbacks: List[Callable[["Lease"], Any]] = []
        self._mu = threading.Lock()
        self._wake = threading.Event()
        self._state = "held"  # held, lost, released
        self._error: Optional[BaseException] = None
        self._freed = False
        self._deadline = local_deadline(sent_at, ttl, margin)
        self._next_renew = time.monotonic() if renew_now else sent_at + self.interval * self._jitter()
        self._failures = 0
        self._load: Optional[float] = None  # report_load
        self._loads_refused = False
        self._last_error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, name="tenure-keepalive-%s" % key, daemon=True)

    @staticmethod
    def _jitter() -> float:
        return random.uniform(0.9, 1.1)

    def _start(self) -> None:
        self._thread.start()

    # ---- state -----------------------------------------------------------

    @property
    def deadline(self) -> float:
        """The local deadline, a time.monotonic() instant."""
        with self._mu:
            return self._deadline

    def remaining(self) -> float:
        """Seconds left until the local deadline (negative once passed)."""
        return self.deadline - time.monotonic()

    def valid(self) -> bool:
        """True while the lease is held: not released, no renewal refused,
        and the local deadline not passed. It checks the deadline itself,
        so a process that wakes from a pause sees the loss at once. Call it
        right before an action that needs the lease (and fence the action
        with token anyway)."""
        self._check_deadline(time.monotonic())
        with self._mu:
            return self._state == "held"

    @property
    def error(self) -> Optional[BaseException]:
        """None while held; then why the lease ended."""
        self._check_deadline(time.monotonic())
        with self._mu:
            return self._error

    def wait_lost(self, timeout: Optional[float] = None) -> bool:
        """Blocks until the lease ends (lost or released) or timeout
        passes; True when it ended. The deadline is watched meanwhile."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            left = 0.05 if end is None else min(0.05, end - time.monotonic())
            if left <= 0:
                return self.done.is_set()
            if self.done.wait(left) or not self.valid():
                return True

    def add_done_callback(self, fn: Callable[["Lease"], Any]) -> None:
        """Calls fn(lease) once when the lease ends (lost or released), at
        once if it has ended already."""
        with self._mu:
            if self._state == "held":
                self._callbacks.append(fn)
                return
        fn(self)

    def _check_deadline(self, now: float) -> None:
        with self._mu:
            if self._state != "held" or now < self._deadline:
                return
            err = self._expired_error()
        self._end("lost", err)

    def _expired_error(self) -> LeaseExpiredLocally:
        msg = "lease %r (token %d): local deadline passed without a successful renewal" % (self.key, self.token)
        if self._last_error is not None:
            msg += " (%d failed renewals, last: %s)" % (self._failures, self._last_error)
        return LeaseExpiredLocally(msg)

    def _end(self, state: str, err: BaseException) -> bool:
        """Ends the lease in state with err; True if this call ended it."""
        with self._mu:
            if self._state != "held":
                return False
            self._state, self._error = state, err
            callbacks, self._callbacks = self._callbacks, []
        self.done.set()
        self._wake.set()
        _forget(self.client, (self.holder, self.key), self)
        for cb in callbacks:
            try:
                cb(self)
            except Exception:  # a callback must not break the keep-alive
                log.exception("lease done callback failed")
        if state == "lost":
            log.warning("lease_lost key=%s holder=%s token=%d error=%s", self.key, self.holder, self.token, err)
            if self.election:
                log.info("leader_lost election=%s key=%s holder=%s token=%d error=%s",
                         self.election, self.key, self.holder, self.token, err)
            self._hook(self._on_lost, err)
        return True

    def _hook(self, fn: Optional[Callable[..., Any]], *args: Any) -> None:
        """Calls a hook on this thread; its exception is logged, never
        raised into the keep-alive."""
        if fn is None:
            return
        try:
            fn(self, *args)
        except Exception:
            log.exception("lease hook %s failed", getattr(fn, "__name__", "?"))

    def _renew_failed(self, err: BaseException) -> None:
        """A renewal failed transiently or took longer than an interval:
        reported, then retried (or, strict, the lease ends)."""
        with self._mu:
            self._failures += 1
            self._last_error = err
            self._next_renew = time.monotonic() + retry_delay(self.interval, self._failures)
        log.warning("lease_renew_failed key=%s holder=%s token=%d error=%s",
                    self.key, self.holder, self.token, err)
        self._hook(self._on_renew_failed, err)
        if self._strict:
            self._end("lost", RenewFailedError("lease %r (token %d): renewal failed: %s"
                                               % (self.key, self.token, err)))

    # ---- renewals --------------------------------------------------------

    def _apply_renewal(self, info: Dict[str, Any], sent_at: float) -> bool:
        """Applies a successful renewal sent at sent_at; False when it came
        too late (the deadline passed meanwhile: the lease stays lost)."""
        now = time.monotonic()
        with self._mu:
            if self._state != "held" or now >= self._deadline:
                ok = False
            else:
                self._deadline = max(self._deadline, local_deadline(sent_at, self.ttl, self.margin))
                self._next_renew = sent_at + self.interval * self._jitter()
                self._failures, self._last_error = 0, None
                self.info = info
                ok = True
        if not ok:
            self._check_deadline(now)
        return ok

    def _refused(self, err: APIError) -> None:
        with self._mu:
            # Nothing left to release, unless an operator ended the lease
            # (it stays held until its deadline), and nothing a release
            # could do when the secret is not the lease's.
            self._freed = (isinstance(err, LeaseLostError) and err.reason not in _OPERATOR_REASONS
                           or isinstance(err, WrongSecretError))
        self._end("lost", err)

    def report_load(self, load: float) -> None:
        """Sets the key's load (a level, from 0 to 1e15, in a unit the
        application chooses): each renewal from now on reports it, and the
        leader keeps a decayed average of the key's reports for placement
        by load. Raises InvalidError for a load outside the range."""
        load = float(load)
        if not 0 <= load <= MAX_LOAD:
            raise InvalidError("load %r is outside [0, %g]" % (load, MAX_LOAD))
        with self._mu:
            if not self._loads_refused:
                self._load = load

    def _renew_once(self, **kwargs: Any) -> Tuple[Dict[str, Any], Any]:
        """One renewal, with the key's load when one is set. A server
        older than load reports refuses the field (400 naming load): the
        renewal is sent again without it, and loads are not sent again, so
        the lease is not lost for a report."""
        load = self._load
        if load is None:
            return self.client.renew_once(self.key, self.token, self.holder, **kwargs)
        try:
            return self.client.renew_once(self.key, self.token, self.holder, load=load, **kwargs)
        except BadRequestError as e:
            if e.field != "load" or not 0 <= load <= MAX_LOAD:
                raise
            log.warning("load_reports_refused key=%s error=%s note=the server does not take loads; renewing without",
                        self.key, e)
            with self._mu:
                self._load = None
                self._loads_refused = True
            return self.client.renew_once(self.key, self.token, self.holder, **kwargs)

    def renew(self) -> None:
        """Renews now (the keep-alive does it by itself). Raises the
        refusal (LeaseLostError, ...) and ends the lease when the cluster
        refuses it; raises LeaseExpiredLocally when the lease is no longer
        valid; a transient failure is raised and the lease stays valid
        until its deadline."""
        if not self.valid():
            raise self.error or LeaseExpiredLocally("lease %r ended" % self.key)
        try:
            info, ans = self._renew_once(deadline=self.deadline)
        except APIError as e:
            if not e.transient:
                self._refused(e)
            raise
        if not self._apply_renewal(info, ans.sent_at):
            raise self.error or LeaseExpiredLocally("lease %r ended" % self.key)

    def _run(self) -> None:
        """The keep-alive thread: renews when due, ends the lease when its
        deadline passes; returns once the lease has ended."""
        while True:
            now = time.monotonic()
            self._check_deadline(now)
            with self._mu:
                if self._state != "held":
                    return
                due = self._next_renew
                deadline = self._deadline
            if now < due:
                self._wake.wait(min(due, deadline) - now)
                self._wake.clear()
                continue
            # One renewal with the client's retries, each attempt bounded
            # by TTL/5 (200ms to the client's timeout), all of it by one
            # renewal interval (so that a hung renewal is reported while
            # the lease is still held) and by the deadline: an answer after
            # it could not save the lease.
            attempt_timeout = min(max(self.ttl / 5.0, 0.2), self.client.timeout)
            started = time.monotonic()
            try:
                info, ans = self._renew_once(attempt_timeout=attempt_timeout,
                                             deadline=min(deadline, started + self.interval))
            except TenureError as e:
                if isinstance(e, APIError) and not e.transient:
                    self._refused(e)
                    return
                self._renew_failed(e)
                continue
            except Exception as e:  # an unexpected error: retry until the deadline
                self._renew_failed(e)
                continue
            if self._apply_renewal(info, ans.sent_at):
                self._hook(self._on_renewed, time.monotonic() - started)

    # ---- release ---------------------------------------------------------

    def release(self) -> None:
        """Hands the key back at once: stops the keep-alive, sets done, and
        releases the lease on the cluster, which grants the key to its
        first waiter. Idempotent. A lost lease is still released on the
        cluster unless the cluster refused it already (an operator's revoke
        keeps the key held until the deadline; the release frees it at
        once)."""
        self._end("released", ReleasedError("lease %r (token %d) released" % (self.key, self.token)))
        with self._mu:
            if self._freed:
                return
        ident = (self.holder, self.key)
        marker = _Releasing()
        kept = getattr(self.client, "_kept", None)
        if kept is not None:
            with self.client._kept_mu:
                if kept.get(ident) is not None:
                    # This client keeps, or acquires, a newer lease of this
                    # holder on the key: the cluster may have answered it
                    # with this very lease, which is then no longer ours
                    # to free (or it expires after its TTL).
                    with self._mu:
                        self._freed = True
                    return
                kept[ident] = marker
        try:
            self.client.release_once(self.key, self.token, self.holder)
        finally:
            _forget(self.client, ident, marker)
        with self._mu:
            self._freed = True
        log.debug("lease_released key=%s holder=%s token=%d", self.key, self.holder, self.token)

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.release()
        except TenureError:
            if exc[0] is None:
                raise

    def __repr__(self) -> str:
        with self._mu:
            state = self._state
        return "Lease(key=%r, holder=%r, token=%d, ttl=%g, state=%s)" % (
            self.key, self.holder, self.token, self.ttl, state)


def acquire(client: "Client", key: str, ttl: float = 10.0, holder: Optional[str] = None,
            metadata: Optional[Dict[str, str]] = None, wait: float = 0.0,
            margin: Optional[float] = None,
            on_lost: Optional[Callable[[Lease, BaseException], Any]] = None,
            stop: Optional[threading.Event] = None, wait_chunk: float = 60.0,
            on_acquired: Optional[Callable[[Lease], Any]] = None,
            on_renewed: Optional[Callable[[Lease, float], Any]] = None,
            on_renew_failed: Optional[Callable[[Lease, BaseException], Any]] = None,
            renew_interval: Optional[float] = None, lose_on_renew_failure: bool = False,
            election: str = "") -> Optional[Lease]:
    """Client.acquire: acquires key (waiting as wait says, in blocking
    requests of at most wait_chunk seconds) and starts its keep-alive.
    Returns None only when stop was set while waiting."""
    holder = holder or client.holder
    if not key:
        raise InvalidError("key is empty")
    if ttl <= 0:
        raise InvalidError("ttl must be positive, got %r" % (ttl,))
    if wait < 0:
        raise InvalidError("wait must not be negative, got %r" % (wait,))
    if margin is None:
        margin = default_margin(ttl)
    elif not (ttl / 100.0 <= margin <= ttl / 2.0):
        raise InvalidError("margin must be between ttl/100 and ttl/2, got %r" % (margin,))
    if renew_interval is not None and not (ttl / 20.0 <= renew_interval <= (ttl - margin) / 2.0):
        raise InvalidError("renew_interval must be between ttl/20 and (ttl - margin)/2, got %r"
                           % (renew_interval,))
    hooks = {"on_lost": on_lost, "on_renewed": on_renewed, "on_renew_failed": on_renew_failed,
             "interval": renew_interval, "lose_on_renew_failure": lose_on_renew_failure,
             "election": election}
    ident = (holder, key)
    _reserve(client, ident)
    lease: Optional[Lease] = None
    try:
        lease = _acquire(client, key, ttl, holder, metadata, wait, margin, hooks, stop, wait_chunk)
    finally:
        with client._kept_mu:
            if client._kept.get(ident) is _ACQUIRING:
                if lease is not None:
                    client._kept[ident] = lease
                else:
                    del client._kept[ident]
    if lease is not None:
        lease._start()
        log.debug("lease_acquired key=%s holder=%s token=%d ttl=%g", key, holder, lease.token, lease.ttl)
        lease._hook(on_acquired)
    return lease


def _reserve(client: "Client", ident: Any) -> None:
    with client._kept_mu:
        cur = client._kept.get(ident)
        if cur is not None:
            what = ("being acquired" if cur is _ACQUIRING else
                    "being released" if isinstance(cur, _Releasing) else "kept")
            raise DuplicateLeaseError("the lease of holder %r on %r is %s by this client already" % (ident[0], ident[1], what))
        client._kept[ident] = _ACQUIRING


def _forget(client: "Client", ident: Any, entry: Any) -> None:
    """Drops ident from the client's kept leases if entry is still there."""
    kept = getattr(client, "_kept", None)
    if kept is None:
        return
    with client._kept_mu:
        if kept.get(ident) is entry:
            del kept[ident]


_ACQUIRING = object()


class _Releasing:
    """Marks a release in flight: until it is answered no acquisition of
    the same holder and key may start, since the cluster would answer it
    with the very lease being released, and the release would free it."""


def _acquire(client: "Client", key: str, ttl: float, holder: str, metadata: Optional[Dict[str, str]],
             wait: float, margin: float, hooks: Dict[str, Any], stop: Optional[threading.Event],
             wait_chunk: float) -> Optional[Lease]:
    end = time.monotonic() + wait if 0 < wait < float("inf") else None
    chunk = wait_chunk
    failures = 0
    info: Dict[str, Any] = {}
    while True:
        if stop is not None and stop.is_set():
            return None
        w = 0.0
        if wait > 0:
            w = chunk if end is None else min(chunk, end - time.monotonic())
            if w < 0.001:
                w = 0.0
        asked = time.monotonic()
        try:
            info, ans = client.acquire_once(key, holder, ttl, w, metadata)
            break
        except TenureError as e:
            waiting = wait > 0 and (end is None or time.monotonic() < end) and not (stop is not None and stop.is_set())
            if waiting and isinstance(e, APIError) and e.code == "invalid_wait" and w > 1:
                chunk = w / 2  # the servers' max-wait is below our chunk
                continue
            if waiting and isinstance(e, HeldError) and w > 0 and time.monotonic() - asked >= w / 2:
                failures = 0  # a chunk of the wait ended: queue again
                continue
            if waiting and (isinstance(e, HeldError) or _transient(e)):
                failures += 1
                if hooks.get("election") and _transient(e):
                    log.warning("leader_acquire_failed election=%s key=%s retrying=true error=%s",
                                hooks["election"], key, e)
                pause = client.backoff(failures, e.retry_after if isinstance(e, APIError) else 0.0)
                if stop is not None:
                    stop.wait(pause)
                else:
                    time.sleep(pause)
                continue
            if _transient(e) and _outcome_unknown(e):
                _abandon(client, key, holder)
            raise
    granted = info.get("ttl")
    if isinstance(granted, str):
        try:
            g = parse_duration(granted)
            if 0 < g < ttl:
                ttl = g
        except ValueError:
            pass
    margin = min(margin, ttl / 2.0)
    interval = renew_interval(ttl)
    if hooks.get("interval") is not None:
        # A shorter grant than asked: keep the interval within its bounds.
        hooks["interval"] = min(max(hooks["interval"], ttl / 20.0), (ttl - margin) / 2.0)
        interval = hooks["interval"]
    sent_at = ans.sent_at
    renew_now = False
    if time.monotonic() - sent_at > interval:
        # The acquisition waited in the queue: sent_at is the only safe
        # lower bound of the grant, and it may be near the deadline. Renew
        # once and count from that renewal.
        try:
            info2, ans2 = client.renew_once(key, int(info["token"]), holder,
                                            deadline=time.monotonic() + interval)
            info, sent_at = info2, ans2.sent_at
        except TenureError as e:
            if isinstance(e, APIError) and not e.transient:
                raise
            if time.monotonic() >= local_deadline(sent_at, ttl, margin):
                _release_quietly(client, key, holder, int(info["token"]))
                raise LeaseExpiredLocally("lease %r (token %s): the acquisition took too long and its first "
                                          "renewal failed: %s" % (key, info.get("token"), e)) from e
            renew_now = True
    return Lease(client, key, holder, info, ttl, margin, sent_at, renew_now=renew_now, **hooks)


def _release_quietly(client: "Client", key: str, holder: str, token: int) -> None:
    try:
        client.release_once(key, token, holder, deadline=time.monotonic() + CLEANUP_TIMEOUT)
    except TenureError as e:
        log.debug("release failed; the lease will expire: key=%s token=%d error=%s", key, token, e)


def _abandon(client: "Client", key: str, holder: str) -> None:
    """Releases key if the cluster granted it to holder after all (an
    acquisition whose outcome is unknown), best effort."""
    try:
        cur = client.get_lease(key)
    except TenureError:
        return
    if cur and cur.get("state") == "held" and cur.get("holder") == holder:
        _release_quietly(client, key, holder, int(cur.get("token", 0)))
