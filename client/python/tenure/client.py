"""The HTTP layer of the tenure client: addresses, leader following,
retries with backoff, and one method per lease route of the API v1
(docs/http-api.md).

It follows the Go client (client/ in the repository): requests go to the
address that answered last; an answer that names the leader in
X-Tenure-Leader-Addr moves the next request there when the client may
trust that address (a configured one, an https one verified against the
client's own CA, or any with trust_leader_hints); a retryable failure
(no answer, 429, 502, 503, 504) moves to the hinted leader or to the next
configured address and is retried with full-jitter exponential backoff.
Every lease operation is idempotent, so an unknown outcome is retried too.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import secrets
import socket
import ssl
import threading
import time
import urllib.parse
import uuid
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from .durations import format_duration
from .errors import (APIError, InvalidError, NotFoundError, TenureError, UnavailableError,
                     error_from_answer)

ENV_HTTP_ADDR = "TENURE_HTTP_ADDR"
ENV_HTTP_TOKEN = "TENURE_HTTP_TOKEN"
ENV_CACERT = "TENURE_CACERT"
ENV_CLIENT_CERT = "TENURE_CLIENT_CERT"
ENV_CLIENT_KEY = "TENURE_CLIENT_KEY"
DEFAULT_HTTP_ADDR = "127.0.0.1:7500"

HEADER_TOKEN = "X-Tenure-Token"
HEADER_LEADER_ADDR = "X-Tenure-Leader-Addr"
HEADER_RELEASE = "X-Tenure-Release"
HEADER_INDEX = "X-Tenure-Index"

_MAX_ANSWER = 64 << 20


def new_holder_id() -> str:
    """hostname-pid-<8 random hex>: a holder identity never reused by a
    restarted process, as the Go client's NewHolderID."""
    return "%s-%d-%s" % (socket.gethostname(), os.getpid(), uuid.uuid4().hex[:8])


def new_lease_secret() -> str:
    """A new lease secret: 128 bits from the operating system's
    cryptographic source, in 32 hex digits, as the Go client's
    NewLeaseSecret."""
    return secrets.token_hex(16)


def normalize_address(addr: str, scheme: str) -> str:
    """"host:port" or "scheme://host:port" as "scheme://host:port"."""
    a = addr.strip()
    if not a:
        raise InvalidError("empty address")
    if "://" not in a:
        a = scheme + "://" + a
    u = urllib.parse.urlsplit(a)
    if u.scheme not in ("http", "https"):
        raise InvalidError("address %r: scheme must be http or https" % addr)
    if not u.netloc:
        raise InvalidError("address %r: no host" % addr)
    if u.path not in ("", "/") or u.query or u.fragment or "@" in u.netloc:
        raise InvalidError("address %r: only scheme, host and port are allowed" % addr)
    return "%s://%s" % (u.scheme, u.netloc)


class Answer:
    """A successful answer: status, JSON body (or None), headers (lower-case
    names), the server that answered, and sent_at: time.monotonic() taken
    just before the answering attempt was sent. A holder counts the life of
    a lease from sent_at."""

    def __init__(self, status: int, body: Any, headers: Dict[str, str], address: str, sent_at: float):
        self.status = status
        self.body = body
        self.headers = headers
        self.address = address
        self.sent_at = sent_at

    @property
    def index(self) -> int:
        """The X-Tenure-Index header: the index to block on next (0 when
        absent)."""
        return _header_index(self.headers)


class _TransportError(Exception):
    """An attempt that got no HTTP answer."""

    def __init__(self, err: BaseException, refused: bool, timeout: bool):
        super().__init__(str(err) or err.__class__.__name__)
        self.err = err
        self.refused = refused
        self.timeout = timeout


class Router:
    """Chooses the server of each attempt (the Go client's router).

    trusted(leader) says whether a leader address outside the configured
    ones may be followed. Safe for concurrent use.
    """

    def __init__(self, seeds: List[str], trusted: Optional[Callable[[str], bool]] = None):
        if not seeds:
            raise InvalidError("no server address")
        self._mu = threading.Lock()
        self.seeds = list(seeds)
        self.cur = seeds[0]
        self._next = 1 % len(seeds)
        self._avoid = ""
        self._trusted = trusted

    def _follow(self, addr: str, leader_hdr: str) -> str:
        if not leader_hdr:
            return ""
        scheme = urllib.parse.urlsplit(addr).scheme or "http"
        try:
            leader = normalize_address(leader_hdr, scheme)
        except InvalidError:
            return ""
        if leader == addr or leader == self._avoid:
            return ""
        if leader not in self.seeds and (self._trusted is None or not self._trusted(leader)):
            return ""
        return leader

    def pick(self) -> str:
        with self._mu:
            return self.cur

    def answered(self, addr: str, leader_hdr: str) -> None:
        with self._mu:
            self.cur = addr
            leader = self._follow(addr, leader_hdr)
            if leader:
                self.cur = leader
                self._avoid = ""

    def failed(self, addr: str, leader_hdr: str, conn_err: bool) -> None:
        with self._mu:
            if conn_err:
                self._avoid = addr
            leader = self._follow(addr, leader_hdr)
            if leader:
                self.cur = leader
                return
            if self.cur != addr:
                return  # a concurrent call has moved on already
            if addr in self.seeds:
                i = self.seeds.index(addr)
                self.cur = self.seeds[(i + 1) % len(self.seeds)]
                self._next = (i + 2) % len(self.seeds)
                return
            self.cur = self.seeds[self._next]
            self._next = (self._next + 1) % len(self.seeds)


def classify(err: BaseException, idempotent: bool = True) -> Tuple[bool, bool, float]:
    """(retry, conn_err, retry_after) of a failed attempt, as the Go client.

    Retryable: no answer, 429, 502, 503, 504. Retry-After is honoured on 429
    and on 503 too_many_connections; on 503 no_leader and leadership_lost
    the servers send whole seconds while a hand-over takes milliseconds, so
    the backoff starts at the base delay there. A request that is not
    idempotent is retried only when the server surely did not act.
    """
    if isinstance(err, _TransportError):
        return (idempotent or err.refused), True, 0.0
    if not isinstance(err, APIError):
        return False, False, 0.0
    if err.status == 429:
        return True, False, err.retry_after
    if err.status == 503:
        ra = 0.0 if err.code in ("no_leader", "leadership_lost") else err.retry_after
        return (idempotent or err.code == "no_leader"), False, ra
    if err.status == 502:
        return idempotent, True, err.retry_after
    if err.status == 504:
        return idempotent, False, err.retry_after
    return False, False, 0.0


def failing_over(err: BaseException) -> bool:
    """True for what a client sees while the cluster has no serving leader:
    a server that cannot be reached (not a timeout), a 502 or a 503."""
    if isinstance(err, _TransportError):
        return not err.timeout
    return isinstance(err, APIError) and err.status in (502, 503)


def _parse_retry_after(value: Optional[str]) -> float:
    if not value:
        return 0.0
    try:
        return max(0.0, float(value.strip()))
    except ValueError:
        return 0.0


def _header_index(headers: Dict[str, str]) -> int:
    try:
        return max(0, int(headers.get(HEADER_INDEX.lower(), "") or 0))
    except ValueError:
        return 0


def _quote_key(key: str) -> str:
    return urllib.parse.quote(key, safe="/:")


def _obj(body: Any) -> Dict[str, Any]:
    """A JSON object answer as a dict ({} for an empty answer)."""
    return body if isinstance(body, dict) else {}


def _group_path(name: str, suffix: str = "") -> str:
    if not name:
        raise InvalidError("group name is empty")
    return "/v1/groups/" + urllib.parse.quote(name, safe="") + suffix


class Client:
    """A client of a tenure cluster.

    addresses: "host:port" or "scheme://host:port" of some or all servers
    (a list, or a comma-separated string); without a scheme they are https
    when ca_file is given, http otherwise. token: the ACL token secret, sent
    as X-Tenure-Token. ca_file: the CA that signed the servers'
    certificates; cert_file and key_file: the client certificate for
    servers that verify clients (-tls-verify-incoming). holder: the default
    holder of acquisitions (default new_holder_id()). lease_secret: the
    lease secret sent with every acquisition, renewal and release (default
    new_lease_secret(), one per Client): only whoever knows a lease's secret
    may renew, release or acquire it again; a holder's name proves nothing. timeout: seconds of
    one attempt of a call that does not block, and the budget of the waits
    of the retries spanning a failover. retry_max: retries of other
    retryable failures (0: none). retry_base_delay, retry_max_delay: the
    backoff, seconds.

    Client.from_env() reads the addresses, token and TLS files from the
    environment variables of the Go client and the CLI.

    Safe for concurrent use by several threads.
    """

    def __init__(self, addresses: Any = None, token: Optional[str] = None,
                 ca_file: Optional[str] = None, cert_file: Optional[str] = None,
                 key_file: Optional[str] = None, holder: Optional[str] = None,
                 timeout: float = 10.0, retry_max: int = 5,
                 retry_base_delay: float = 0.025, retry_max_delay: float = 2.0,
                 trust_leader_hints: bool = False,
                 ssl_context: Optional[ssl.SSLContext] = None,
                 lease_secret: Optional[str] = None):
        if addresses is None:
            addresses = [DEFAULT_HTTP_ADDR]
        if isinstance(addresses, str):
            addresses = addresses.split(",")
        addresses = [a for a in (x.strip() for x in addresses) if a]
        if not addresses:
            addresses = [DEFAULT_HTTP_ADDR]
        if timeout <= 0:
            raise InvalidError("timeout must be positive, got %r" % (timeout,))
        if retry_max < 0:
            raise InvalidError("retry_max must not be negative, got %r" % (retry_max,))
        if retry_max > 0 and (retry_base_delay <= 0 or retry_max_delay < retry_base_delay):
            raise InvalidError("retry delays must be positive, and retry_max_delay at least retry_base_delay")
        if bool(cert_file) != bool(key_file):
            raise InvalidError("cert_file and key_file go together")
        tls = bool(ca_file or cert_file or ssl_context)
        seeds: List[str] = []
        for a in addresses:
            n = normalize_address(a, "https" if tls else "http")
            if n not in seeds:
                seeds.append(n)
        self._ssl = ssl_context
        if self._ssl is None and any(s.startswith("https://") for s in seeds):
            self._ssl = ssl.create_default_context(cafile=ca_file or None)
            if cert_file:
                self._ssl.load_cert_chain(cert_file, key_file)
        trusted: Optional[Callable[[str], bool]] = None
        if trust_leader_hints:
            trusted = lambda leader: True  # noqa: E731
        elif ca_file and ssl_context is None:
            # Only a holder of a certificate of our own CA can answer there.
            trusted = lambda leader: leader.startswith("https://")  # noqa: E731
        self.router = Router(seeds, trusted)
        self.token = token or ""
        self.holder = holder or new_holder_id()
        self.lease_secret = lease_secret or new_lease_secret()
        self.timeout = float(timeout)
        self.retry_max = int(retry_max)
        self.retry_base_delay = float(retry_base_delay)
        self.retry_max_delay = float(retry_max_delay)
        self._rand = random.Random()
        # (holder, key) of the leases this client keeps alive or acquires.
        self._kept_mu = threading.Lock()
        self._kept: Dict[Tuple[str, str], Any] = {}

    @classmethod
    def from_env(cls, **kwargs: Any) -> "Client":
        """A Client configured from TENURE_HTTP_ADDR, TENURE_HTTP_TOKEN,
        TENURE_CACERT, TENURE_CLIENT_CERT and TENURE_CLIENT_KEY; keyword
        arguments override them."""
        env: Dict[str, Any] = {
            "addresses": os.environ.get(ENV_HTTP_ADDR) or None,
            "token": os.environ.get(ENV_HTTP_TOKEN) or None,
            "ca_file": os.environ.get(ENV_CACERT) or None,
            "cert_file": os.environ.get(ENV_CLIENT_CERT) or None,
            "key_file": os.environ.get(ENV_CLIENT_KEY) or None,
        }
        env.update(kwargs)
        return cls(**env)

    # ---- transport -------------------------------------------------------

    def backoff(self, attempt: int, retry_after: float = 0.0) -> float:
        """The pause before retry number attempt (from 1): full jitter over
        min(retry_max_delay, retry_base_delay * 2**(attempt-1)), and never
        less than retry_after."""
        ceiling = min(self.retry_max_delay, self.retry_base_delay * (2 ** min(attempt - 1, 32)))
        return max(self._rand.uniform(0, ceiling), retry_after)

    def _attempt(self, addr: str, method: str, target: str, data: Optional[bytes],
                 timeout: float) -> Tuple[int, bytes, Dict[str, str], float]:
        u = urllib.parse.urlsplit(addr)
        conn: http.client.HTTPConnection
        if u.scheme == "https":
            conn = http.client.HTTPSConnection(u.hostname or "", u.port or 443, timeout=timeout, context=self._ssl)
        else:
            conn = http.client.HTTPConnection(u.hostname or "", u.port or 80, timeout=timeout)
        headers = {"Accept": "application/json", "User-Agent": "tenure-python-client/1"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers[HEADER_TOKEN] = self.token
        sent_at = time.monotonic()
        connected = False
        try:
            conn.connect()
            connected = True
            conn.request(method, target, body=data, headers=headers)
            resp = conn.getresponse()
            # Read in pieces: read(n) allocates n bytes at once on 3.9.
            parts: List[bytes] = []
            size = 0
            while size <= _MAX_ANSWER:
                part = resp.read(1 << 16)
                if not part:
                    break
                parts.append(part)
                size += len(part)
            body = b"".join(parts)
            hdrs = {k.lower(): v for k, v in resp.getheaders()}
            return resp.status, body, hdrs, sent_at
        except (socket.timeout, TimeoutError) as e:
            raise _TransportError(e, refused=not connected, timeout=True) from e
        except (OSError, http.client.HTTPException) as e:
            raise _TransportError(e, refused=not connected, timeout=False) from e
        finally:
            conn.close()

    def request(self, method: str, path: str, body: Any = None,
                query: Optional[Dict[str, str]] = None, wait: float = 0.0,
                attempt_timeout: Optional[float] = None, deadline: Optional[float] = None,
                idempotent: bool = True) -> Answer:
        """Sends one API request with the retries; returns the Answer of a
        2xx, raises an APIError for an error answer that is not retried (or
        the last one after the retries), UnavailableError when no server
        answered.

        wait: the seconds the server may block (added to each attempt's
        time limit). attempt_timeout: the time limit of one attempt
        (default: the Client's timeout). deadline: a time.monotonic()
        instant after which no attempt runs and no attempt lasts.
        """
        data = None if body is None else json.dumps(body).encode("utf-8")
        target = path
        if query:
            q = {k: v for k, v in query.items() if v not in (None, "")}
            if q:
                target += "?" + urllib.parse.urlencode(sorted(q.items()))
        per_attempt = (attempt_timeout or self.timeout) + wait
        waited = 0.0
        attempt = 0
        while True:
            attempt += 1
            addr = self.router.pick()
            t = per_attempt
            if deadline is not None:
                t = min(t, deadline - time.monotonic())
                if t <= 0:
                    raise UnavailableError("%s %s: out of time before attempt %d" % (method, path, attempt))
            leader_hdr = ""
            try:
                status, raw, hdrs, sent_at = self._attempt(addr, method, target, data, t)
            except _TransportError as e:
                err: BaseException = e
            else:
                leader_hdr = hdrs.get(HEADER_LEADER_ADDR.lower(), "")
                if len(raw) > _MAX_ANSWER:
                    raise APIError(status, "", "answer of %s %s exceeds %d bytes" % (method, path, _MAX_ANSWER))
                parsed: Any = None
                if raw:
                    try:
                        parsed = json.loads(raw.decode("utf-8"))
                    except (ValueError, UnicodeDecodeError):
                        parsed = raw.decode("utf-8", "replace")
                if 200 <= status <= 299:
                    self.router.answered(addr, leader_hdr)
                    return Answer(status, parsed, hdrs, addr, sent_at)
                api_err = error_from_answer(status, parsed, _parse_retry_after(hdrs.get("retry-after")))
                api_err.index = _header_index(hdrs)
                err = api_err
            retry, conn_err, retry_after = classify(err, idempotent)
            if not retry:
                raise err
            self.router.failed(addr, leader_hdr, conn_err)
            delay = self.backoff(attempt, retry_after)
            if not self._may_retry(attempt, failing_over(err), waited + delay) or (
                    deadline is not None and time.monotonic() + delay >= deadline):
                if isinstance(err, APIError):
                    raise err
                raise UnavailableError("%s %s: giving up after %d attempts, last at %s: %s"
                                       % (method, path, attempt, addr, err)) from err
            waited += delay
            time.sleep(delay)

    def _may_retry(self, attempt: int, failover: bool, waited: float) -> bool:
        if self.retry_max == 0:
            return False
        if attempt <= self.retry_max:
            return True
        return failover and waited <= self.timeout

    # ---- the lease routes ------------------------------------------------

    def acquire_once(self, key: str, holder: Optional[str] = None, ttl: float = 10.0,
                     wait: float = 0.0, metadata: Optional[Dict[str, str]] = None,
                     deadline: Optional[float] = None,
                     secret: Optional[str] = None) -> Tuple[Dict[str, Any], Answer]:
        """PUT /v1/leases/{key}: one acquisition, without keep-alive, under
        the lease secret (secret, or the client's lease_secret). Returns the
        lease (a dict, with its "secret") and the Answer (answer.status 201:
        a new grant, 200: this holder held it already under this secret).
        Raises HeldError (with .lease) when another holder has it after the
        wait, or this holder under another secret."""
        if not key:
            raise InvalidError("key is empty")
        body: Dict[str, Any] = {"holder": holder or self.holder, "ttl": format_duration(ttl),
                                "secret": secret or self.lease_secret}
        if wait > 0:
            body["wait"] = format_duration(wait)
        if metadata is not None:
            body["metadata"] = dict(metadata)
        ans = self.request("PUT", "/v1/leases/" + _quote_key(key), body, wait=wait, deadline=deadline)
        return ans.body, ans

    def renew_once(self, key: str, token: int, holder: Optional[str] = None,
                   attempt_timeout: Optional[float] = None,
                   deadline: Optional[float] = None,
                   secret: Optional[str] = None, load: Optional[float] = None) -> Tuple[Dict[str, Any], Answer]:
        """POST /v1/renew/{key}: renews one lease under its secret (secret,
        or the client's lease_secret), reporting the key's load when load is
        not None (a level from 0 to 1e15 in the application's unit; see
        docs/placement.md, "Load"). Raises LeaseLostError (with .reason)
        when the lease is no longer held, WrongSecretError when the secret
        is not the lease's."""
        body: Dict[str, Any] = {"holder": holder or self.holder, "token": int(token), "secret": secret or self.lease_secret}
        if load is not None:
            body["load"] = float(load)
        ans = self.request("POST", "/v1/renew/" + _quote_key(key), body,
                           attempt_timeout=attempt_timeout, deadline=deadline)
        return ans.body, ans

    def release_once(self, key: str, token: int, holder: Optional[str] = None,
                     deadline: Optional[float] = None, secret: Optional[str] = None) -> bool:
        """DELETE /v1/leases/{key}: releases a lease under its secret
        (secret, or the client's lease_secret; sent in the body, never in
        the URL); True when this request freed it, False when it had ended
        already (safe to retry). Raises NotHolderError when that holder and
        token never were the key's, WrongSecretError when the secret is not
        the lease's."""
        body = {"holder": holder or self.holder, "token": int(token), "secret": secret or self.lease_secret}
        ans = self.request("DELETE", "/v1/leases/" + _quote_key(key), body, deadline=deadline)
        return ans.headers.get(HEADER_RELEASE.lower(), "") != "gone"

    def get_lease(self, key: str, stale: bool = False) -> Optional[Dict[str, Any]]:
        """GET /v1/leases/{key} (linearizable unless stale): the lease, held
        or free with its last token; None for a key never seen."""
        try:
            ans = self.request("GET", "/v1/leases/" + _quote_key(key), query={"stale": "true" if stale else ""})
        except NotFoundError:
            return None
        return _obj(ans.body)

    def list_leases(self, prefix: str = "", state: str = "") -> List[Dict[str, Any]]:
        """GET /v1/leases, every page."""
        out: List[Dict[str, Any]] = []
        cursor = ""
        while True:
            ans = self.request("GET", "/v1/leases", query={"prefix": prefix, "state": state, "cursor": cursor})
            out.extend(ans.body.get("leases") or [])
            cursor = ans.body.get("next") or ""
            if not cursor:
                return out

    def revoke(self, key: str, force: bool = False) -> List[Dict[str, Any]]:
        """POST /v1/revoke/{key} (operator): ends the key's lease; see the
        API docs. Not retried once it may have taken effect."""
        ans = self.request("POST", "/v1/revoke/" + _quote_key(key),
                           query={"force": "true" if force else ""}, idempotent=False)
        return (ans.body or {}).get("revoked") or []

    def status(self) -> Dict[str, Any]:
        """GET /v1/status of the next server (that node's own view)."""
        return _obj(self.request("GET", "/v1/status").body)

    def read_lease(self, key: str, index: int = 0, wait: float = 300.0,
                   stale: bool = False) -> Tuple[Optional[Dict[str, Any]], int]:
        """GET /v1/leases/{key}, blocking when index > 0: the server answers
        once the key changed past index, or after wait seconds with the same
        answer. Returns (the lease, or None for a key never seen, and the
        index to pass next time: the X-Tenure-Index header)."""
        query = {"stale": "true" if stale else ""}
        w = 0.0
        if index > 0:
            w = max(wait, 0.0)
            query.update(index=str(int(index)), wait=format_duration(w))
        try:
            ans = self.request("GET", "/v1/leases/" + _quote_key(key), query=query, wait=w)
        except NotFoundError as e:
            return None, e.index
        lease = _obj(ans.body)
        return lease, ans.index or int(lease.get("modify_index") or 0)

    # ---- events ----------------------------------------------------------

    def events(self, index: Optional[int] = None, types: Optional[Sequence[str]] = None,
               prefix: str = "", limit: int = 0, wait: float = 0.0) -> Tuple[List[Dict[str, Any]], int]:
        """GET /v1/events: the events after index (without index: the
        oldest the answering server holds), in index order, and the index
        to pass next time. types: the event types to return (acquired,
        released, expired, ending, revoked, ...; all when empty). prefix
        matches an event's key, group or worker. limit: 1 to 1000 (0: the
        server's default, 1000). wait > 0 (with an index) blocks while there
        is no event. Raises CompactedError (.oldest_index) when the events
        after index are gone from the server's history."""
        query = {"prefix": prefix, "type": ",".join(types or []),
                 "limit": str(limit) if limit > 0 else ""}
        w = 0.0
        if index is not None:
            w = max(wait, 0.0)
            query.update(index=str(int(index)), wait=format_duration(w))
        ans = self.request("GET", "/v1/events", query=query, wait=w)
        body = ans.body or {}
        return list(body.get("events") or []), int(body.get("index") or 0)

    def watch_events(self, index: int = 0, types: Optional[Sequence[str]] = None, prefix: str = "",
                     wait: float = 60.0, stop: Optional[threading.Event] = None) -> Iterator[Dict[str, Any]]:
        """Follows the event history from index on with blocking reads of
        at most wait seconds, yielding every event after index that matches
        types and prefix, in index order, each once (resume after an event
        by passing its "index"). Transient failures (a failover, a server
        restart) are retried with backoff, from the last index seen, on the
        next server. It ends when stop is set (noticed within wait
        seconds); an error that retrying cannot fix is raised
        (CompactedError when the watch fell behind the history: read the
        state, then watch again from its oldest_index)."""
        cursor = int(index)
        failures = 0
        while stop is None or not stop.is_set():
            try:
                evs, nxt = self.events(cursor, types, prefix, wait=wait)
            except TenureError as e:
                retry = isinstance(e, UnavailableError)
                after = 0.0
                if isinstance(e, APIError):
                    retry, _, after = classify(e, False)
                if not retry:
                    raise
                failures += 1
                pause = self.backoff(failures, after)
                if stop is None:
                    time.sleep(pause)
                elif stop.wait(pause):
                    return
                continue
            failures = 0
            for ev in evs:
                i = int(ev.get("index") or 0)
                if i <= cursor:
                    continue  # never again, never out of order
                cursor = i
                yield ev
                if stop is not None and stop.is_set():
                    return
            cursor = max(cursor, nxt)

    # ---- groups and key controls (operator) ------------------------------

    def list_groups(self) -> List[Dict[str, Any]]:
        """GET /v1/groups, every page: the groups' summaries, by name."""
        out: List[Dict[str, Any]] = []
        cursor = ""
        while True:
            body = self.request("GET", "/v1/groups", query={"cursor": cursor}).body or {}
            out.extend(body.get("groups") or [])
            cursor = body.get("next") or ""
            if not cursor:
                return out

    def get_group(self, name: str) -> Optional[Dict[str, Any]]:
        """GET /v1/groups/{name}, every page: the group with all its keys
        (the other fields from the last page); None when there is none."""
        path = _group_path(name)
        keys: List[Dict[str, Any]] = []
        cursor = ""
        while True:
            try:
                body = self.request("GET", path, query={"cursor": cursor}).body or {}
            except NotFoundError:
                return None
            keys.extend(body.get("keys") or [])
            cursor = body.get("next") or ""
            if not cursor:
                body["keys"] = keys
                body.pop("next", None)
                return body

    def put_group(self, name: str, keys: Optional[Sequence[str]] = None, prefix: str = "", count: int = 0,
                  max_per_worker: int = 0, stuck_grace: float = 0.0, min_workers: int = 0,
                  replace: bool = False, cas: Optional[int] = None) -> Dict[str, Any]:
        """PUT /v1/groups/{name}: creates the group of keys (or of count
        keys "<prefix><n>"); with replace=True creates or replaces it; with
        cas=N replaces it only if its modify_index is N (a CasFailed is an
        APIError of code "cas_failed" whose body holds the current group).
        Returns the summary. A create or a CAS is retried only when the
        server surely did not act."""
        body: Dict[str, Any] = {}
        if keys is not None:
            body["keys"] = list(keys)
        if prefix:
            body["prefix"] = prefix
        if count:
            body["count"] = int(count)
        if max_per_worker:
            body["max_per_worker"] = int(max_per_worker)
        if stuck_grace:
            body["stuck_grace"] = format_duration(stuck_grace)
        if min_workers:
            body["min_workers"] = int(min_workers)
        if replace and cas is not None:
            raise InvalidError("replace and cas go separately")
        query = {"replace": "true" if replace else "", "cas": "" if cas is None else str(int(cas))}
        return _obj(self.request("PUT", _group_path(name), body, query=query, idempotent=replace).body)

    def replace_group(self, name: str, **spec: Any) -> Dict[str, Any]:
        """put_group(name, replace=True, ...): creates or replaces."""
        return self.put_group(name, replace=True, **spec)

    def put_group_cas(self, name: str, index: int, **spec: Any) -> Dict[str, Any]:
        """put_group(name, cas=index, ...): replaces the group only if its
        modify_index is index (0: only creates)."""
        return self.put_group(name, cas=index, **spec)

    def add_remove_keys(self, name: str, add: Sequence[str] = (), remove: Sequence[str] = ()) -> Dict[str, Any]:
        """POST /v1/groups/{name}/keys: adds and removes keys; the summary."""
        return _obj(self.request("POST", _group_path(name, "/keys"), {"add": list(add), "remove": list(remove)}).body)

    def set_group_keys(self, name: str, keys: Sequence[str]) -> Dict[str, Any]:
        """PUT /v1/groups/{name}/keys: sets the group's whole key set in one
        idempotent call ([] empties it); the keys that stay keep their
        targets and owners. The summary."""
        return _obj(self.request("PUT", _group_path(name, "/keys"), {"keys": list(keys)}).body)

    def set_max_per_worker(self, name: str, max_per_worker: int) -> Dict[str, Any]:
        """PUT /v1/groups/{name}/max-per-worker; the summary."""
        return _obj(self.request("PUT", _group_path(name, "/max-per-worker"),
                            {"max_per_worker": int(max_per_worker)}).body)

    def delete_group(self, name: str) -> bool:
        """DELETE /v1/groups/{name} (the leases are untouched): True when it
        was deleted, False when there was no such group."""
        try:
            self.request("DELETE", _group_path(name))
        except NotFoundError:
            return False
        return True

    def get_controls(self, key: str) -> Dict[str, Any]:
        """GET /v1/controls/{key}: {"key", "disabled", "prohibited"}."""
        return _obj(self.request("GET", "/v1/controls/" + _quote_key(key)).body)

    def edit_controls(self, key: str, disabled: Optional[bool] = None, prohibit: Sequence[str] = (),
                      allow: Sequence[str] = (), force: bool = False) -> Dict[str, Any]:
        """PATCH /v1/controls/{key}: an atomic edit of the key's controls
        (disabled if not None; the holders of prohibit added, then those of
        allow removed). A lease the new controls refuse ends (at once with
        force). The controls, with "ended" when a lease was ended."""
        body: Dict[str, Any] = {}
        if disabled is not None:
            body["disabled"] = bool(disabled)
        if prohibit:
            body["prohibit"] = list(prohibit)
        if allow:
            body["allow"] = list(allow)
        return _obj(self.request("PATCH", "/v1/controls/" + _quote_key(key), body,
                            query={"force": "true" if force else ""}).body)

    # ---- kept-alive leases, elections, fencing ---------------------------

    def acquire(self, key: str, ttl: float = 10.0, holder: Optional[str] = None,
                metadata: Optional[Dict[str, str]] = None, wait: float = 0.0,
                margin: Optional[float] = None, on_lost: Optional[Callable[..., Any]] = None,
                stop: Optional[threading.Event] = None, wait_chunk: float = 60.0,
                on_acquired: Optional[Callable[..., Any]] = None,
                on_renewed: Optional[Callable[..., Any]] = None,
                on_renew_failed: Optional[Callable[..., Any]] = None,
                renew_interval: Optional[float] = None,
                lose_on_renew_failure: bool = False) -> "Lease":
        """Acquires key and keeps the lease alive in a background thread;
        see Lease. wait > 0 queues on the server for up to wait seconds
        (float("inf"): until stop is set). Raises HeldError when another
        holder keeps the key, DuplicateLeaseError when this client keeps
        the lease of that holder on key already.

        Hooks, called on the keep-alive thread (their exceptions are
        logged): on_acquired(lease) once the lease is granted;
        on_renewed(lease, latency) after each successful renewal (latency:
        seconds, retries included); on_renew_failed(lease, err) when a
        renewal failed transiently or did not succeed within one renewal
        interval (the lease stays held until its deadline, and the renewal
        is retried); on_lost(lease, err) once when the lease ends without
        release. renew_interval: seconds between renewals (default TTL/3;
        from TTL/20 to (TTL - margin)/2). lose_on_renew_failure: the first
        failed renewal ends the lease (RenewFailedError)."""
        from .lease import acquire
        return acquire(self, key, ttl=ttl, holder=holder, metadata=metadata, wait=wait,  # type: ignore[return-value]
                       margin=margin, on_lost=on_lost, stop=stop, wait_chunk=wait_chunk,
                       on_acquired=on_acquired, on_renewed=on_renewed, on_renew_failed=on_renew_failed,
                       renew_interval=renew_interval, lose_on_renew_failure=lose_on_renew_failure)

    def election(self, name: str, ttl: float = 10.0, holder: Optional[str] = None,
                 metadata: Optional[Dict[str, str]] = None, margin: Optional[float] = None,
                 wait_chunk: float = 5.0) -> "Election":
        """The election name (key "elections/<name>", or name itself when it
        has a slash)."""
        from .election import Election
        return Election(self, name, ttl=ttl, holder=holder, metadata=metadata, margin=margin,
                        wait_chunk=wait_chunk)

    def run(self, name: str, fn: Callable[..., Any], stop: Optional[threading.Event] = None,
            **kwargs: Any) -> None:
        """Campaigns for the election name and calls fn(lease, stop_work)
        while this process leads; see Election.run."""
        self.election(name, **kwargs).run(fn, stop=stop)


from .lease import Lease  # noqa: E402  (for the annotations above)
from .election import Election  # noqa: E402
