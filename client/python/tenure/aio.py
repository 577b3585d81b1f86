"""An asyncio interface beside the threaded client.

    from tenure.aio import AsyncClient
    c = AsyncClient.from_env()
    async with c.acquire("scenes/01", ttl=10) as lease:
        work = asyncio.create_task(render(lease.token))
        lost = asyncio.create_task(lease.wait_lost())
        await asyncio.wait({work, lost}, return_when=asyncio.FIRST_COMPLETED)

AsyncClient wraps a Client: each call runs the threaded one in the event
loop's default executor, so it never blocks the loop; a kept-alive lease
is still renewed by its own thread. Blocking follows (an election's
leader, the event history) run on a thread each and hand what they read
to the loop; leaving the async for (or cancelling it) stops the thread
within one blocking read.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from typing import (Any, AsyncIterator, Awaitable, Callable, Dict, Generator, Iterator, List,
                    Optional, Sequence, Tuple, TypeVar)

from .client import Client
from .election import Election
from .errors import LeaseExpiredLocally, TenureError
from .lease import Lease

T = TypeVar("T")


async def _call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """fn(*args, **kwargs) on the default executor (asyncio.to_thread of
    Python 3.9, written out so that the call is typed)."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, functools.partial(fn, *args, **kwargs))


async def _stoppable(fn: Callable[[threading.Event], Optional[Lease]]) -> Optional[Lease]:
    """Runs fn(stop) on the executor; cancelling the caller sets stop, and
    a lease fn returns after the cancellation is released."""
    stop = threading.Event()
    loop = asyncio.get_running_loop()
    fut = loop.run_in_executor(None, fn, stop)
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        stop.set()

        def drop(f: "asyncio.Future[Optional[Lease]]") -> None:
            if not f.cancelled() and f.exception() is None:
                lease = f.result()
                if lease is not None:
                    threading.Thread(target=lease.release, daemon=True).start()
        fut.add_done_callback(drop)
        raise


async def _follow(make: Callable[[threading.Event], Iterator[T]]) -> AsyncIterator[T]:
    """Iterates make(stop) on a thread of its own and yields what it
    yields, in order; an exception of it is raised here. Leaving the
    iteration sets stop."""
    loop = asyncio.get_running_loop()
    queue: "asyncio.Queue[Tuple[bool, Any]]" = asyncio.Queue()
    stop = threading.Event()

    def put(item: Tuple[bool, Any]) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody is listening
            stop.set()

    def run() -> None:
        try:
            for value in make(stop):
                put((True, value))
                if stop.is_set():
                    break
        except BaseException as e:  # handed to the loop
            put((False, e))
        else:
            put((False, None))

    threading.Thread(target=run, name="tenure-aio-follow", daemon=True).start()
    try:
        while True:
            ok, value = await queue.get()
            if ok:
                yield value
            elif value is None:
                return
            else:
                raise value
    finally:
        stop.set()


class AsyncLease:
    """A kept-alive Lease seen from asyncio: the same attributes (key,
    holder, token, ttl, metadata, lease: the threaded Lease), valid(),
    remaining() and error as they are, and wait_lost() and release() as
    coroutines. Use it with async with to release it on exit."""

    def __init__(self, lease: Lease):
        self.lease = lease
        self.key = lease.key
        self.holder = lease.holder
        self.token = lease.token
        self.ttl = lease.ttl
        self.metadata = lease.metadata

    def valid(self) -> bool:
        return self.lease.valid()

    def remaining(self) -> float:
        return self.lease.remaining()

    @property
    def error(self) -> Optional[BaseException]:
        return self.lease.error

    async def wait_lost(self) -> BaseException:
        """Returns once the lease has ended (lost, at the latest at its
        local deadline, or released) with the reason (lease.error)."""
        loop = asyncio.get_running_loop()
        ended: "asyncio.Future[None]" = loop.create_future()

        def settle() -> None:
            if not ended.done():
                ended.set_result(None)

        def done(_l: Lease) -> None:
            try:
                loop.call_soon_threadsafe(settle)
            except RuntimeError:
                pass  # the loop is closed
        self.lease.add_done_callback(done)
        await ended
        return self.lease.error or LeaseExpiredLocally("lease %r ended" % self.key)

    async def release(self) -> None:
        """Lease.release on the executor."""
        await _call(self.lease.release)

    async def __aenter__(self) -> "AsyncLease":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self.release()
        except TenureError:
            if exc[0] is None:
                raise


class _Acquiring:
    """What AsyncClient.acquire returns: await it for the AsyncLease, or
    use it in async with, which releases the lease on exit."""

    def __init__(self, start: Callable[[], Awaitable[AsyncLease]]):
        self._start = start
        self._lease: Optional[AsyncLease] = None

    def __await__(self) -> Generator[Any, None, AsyncLease]:
        return self._start().__await__()

    async def __aenter__(self) -> AsyncLease:
        self._lease = await self._start()
        return self._lease

    async def __aexit__(self, *exc: Any) -> None:
        if self._lease is not None:
            await self._lease.__aexit__(*exc)


class AsyncElection:
    """An Election seen from asyncio (election: the threaded one)."""

    def __init__(self, election: Election):
        self.election = election
        self.name = election.name
        self.key = election.key

    async def campaign(self) -> AsyncLease:
        """Returns the leadership's lease once this process leads;
        cancelling it stops the campaign (a lease granted meanwhile is
        released)."""
        lease = await _stoppable(self.election.campaign)
        if lease is None:  # only when stopped, that is cancelled
            raise asyncio.CancelledError()
        return AsyncLease(lease)

    async def resign(self, lease: AsyncLease) -> None:
        """Election.resign on the executor: a standby is elected at once."""
        await _call(self.election.resign, lease.lease)

    async def leader(self) -> Optional[Dict[str, Any]]:
        """The current leader's lease, or None."""
        return await _call(self.election.leader)

    def observe(self, wait: float = 300.0) -> AsyncIterator[Optional[Dict[str, Any]]]:
        """Election.observe as an async iterator: the current leader, then
        each change (None: nobody leads)."""
        return _follow(lambda stop: self.election.observe(stop, wait))


class AsyncClient:
    """The asyncio interface of a Client (client: the threaded Client it
    wraps; or keyword arguments to make one). Safe to share between
    tasks."""

    def __init__(self, client: Optional[Client] = None, **kwargs: Any):
        self.client = client if client is not None else Client(**kwargs)

    @classmethod
    def from_env(cls, **kwargs: Any) -> "AsyncClient":
        return cls(Client.from_env(**kwargs))

    def acquire(self, key: str, ttl: float = 10.0, wait: float = 0.0, **kwargs: Any) -> _Acquiring:
        """Client.acquire (same arguments): await it for an AsyncLease, or
        async with it to release the lease on exit. Cancelling stops a
        waiting acquisition."""
        async def start() -> AsyncLease:
            lease = await _stoppable(lambda stop: self.client.acquire(key, ttl=ttl, wait=wait, stop=stop,
                                                                      **kwargs))
            if lease is None:
                raise asyncio.CancelledError()
            return AsyncLease(lease)
        return _Acquiring(start)

    def election(self, name: str, **kwargs: Any) -> AsyncElection:
        """Client.election (same arguments) as an AsyncElection."""
        return AsyncElection(self.client.election(name, **kwargs))

    def watch_events(self, index: int = 0, types: Optional[Sequence[str]] = None, prefix: str = "",
                     wait: float = 60.0) -> AsyncIterator[Dict[str, Any]]:
        """Client.watch_events as an async iterator."""
        return _follow(lambda stop: self.client.watch_events(index, types, prefix, wait, stop))

    # ---- the plain calls, on the executor --------------------------------

    async def acquire_once(self, key: str, **kwargs: Any) -> Tuple[Dict[str, Any], Any]:
        return await _call(self.client.acquire_once, key, **kwargs)

    async def renew_once(self, key: str, token: int, **kwargs: Any) -> Tuple[Dict[str, Any], Any]:
        return await _call(self.client.renew_once, key, token, **kwargs)

    async def release_once(self, key: str, token: int, **kwargs: Any) -> bool:
        return await _call(self.client.release_once, key, token, **kwargs)

    async def get_lease(self, key: str, stale: bool = False) -> Optional[Dict[str, Any]]:
        return await _call(self.client.get_lease, key, stale)

    async def read_lease(self, key: str, index: int = 0, wait: float = 300.0,
                         stale: bool = False) -> Tuple[Optional[Dict[str, Any]], int]:
        return await _call(self.client.read_lease, key, index, wait, stale)

    async def list_leases(self, prefix: str = "", state: str = "") -> List[Dict[str, Any]]:
        return await _call(self.client.list_leases, prefix, state)

    async def revoke(self, key: str, force: bool = False) -> List[Dict[str, Any]]:
        return await _call(self.client.revoke, key, force)

    async def status(self) -> Dict[str, Any]:
        return await _call(self.client.status)

    async def events(self, index: Optional[int] = None, types: Optional[Sequence[str]] = None,
                     prefix: str = "", limit: int = 0, wait: float = 0.0) -> Tuple[List[Dict[str, Any]], int]:
        return await _call(self.client.events, index, types, prefix, limit, wait)

    async def list_groups(self) -> List[Dict[str, Any]]:
        return await _call(self.client.list_groups)

    async def get_group(self, name: str) -> Optional[Dict[str, Any]]:
        return await _call(self.client.get_group, name)

    async def put_group(self, name: str, **spec: Any) -> Dict[str, Any]:
        return await _call(self.client.put_group, name, **spec)

    async def add_remove_keys(self, name: str, add: Sequence[str] = (),
                              remove: Sequence[str] = ()) -> Dict[str, Any]:
        return await _call(self.client.add_remove_keys, name, add, remove)

    async def set_group_keys(self, name: str, keys: Sequence[str]) -> Dict[str, Any]:
        return await _call(self.client.set_group_keys, name, keys)

    async def set_max_per_worker(self, name: str, max_per_worker: int) -> Dict[str, Any]:
        return await _call(self.client.set_max_per_worker, name, max_per_worker)

    async def delete_group(self, name: str) -> bool:
        return await _call(self.client.delete_group, name)

    async def get_controls(self, key: str) -> Dict[str, Any]:
        return await _call(self.client.get_controls, key)

    async def edit_controls(self, key: str, **edit: Any) -> Dict[str, Any]:
        return await _call(self.client.edit_controls, key, **edit)
