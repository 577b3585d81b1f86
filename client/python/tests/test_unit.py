"""Unit tests of the client without a cluster: the local deadline
arithmetic, the keep-alive against a fake client, the fencing validator,
durations, errors, the router, and retries against a fake HTTP server on
loopback."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
import time
import unittest
from typing import Any, Dict, List, Optional, Tuple

import tenure
from tenure.aio import AsyncClient, AsyncLease
from tenure.client import Router, _TransportError, classify
from tenure.lease import Lease, retry_delay


class DeadlineArithmetic(unittest.TestCase):
    def test_default_margin(self) -> None:
        cases = [  # (name, ttl, want)
            ("tenth of a long ttl", 10.0, 1.0),
            ("at least 100ms", 0.5, 0.1),
            ("at most half the ttl", 0.1, 0.05),
            ("15s", 15.0, 1.5),
        ]
        for name, ttl, want in cases:
            with self.subTest(name):
                self.assertAlmostEqual(tenure.default_margin(ttl), want, msg="default_margin(%g)" % ttl)

    def test_local_deadline_counts_from_send_time(self) -> None:
        # Sent at 100.0 with a TTL of 10s and a margin of 1s: the holder
        # may act until 109.0, whatever time the answer came back.
        self.assertAlmostEqual(tenure.local_deadline(100.0, 10.0, 1.0), 109.0)
        self.assertLess(tenure.local_deadline(100.0, 10.0, tenure.default_margin(10.0)), 100.0 + 10.0)

    def test_renew_interval_and_retry_delay(self) -> None:
        self.assertAlmostEqual(tenure.renew_interval(3.0), 1.0)
        self.assertAlmostEqual(retry_delay(1.0, 1), 0.125)
        self.assertAlmostEqual(retry_delay(1.0, 2), 0.25)
        self.assertAlmostEqual(retry_delay(1.0, 10), 1.0)
        self.assertAlmostEqual(retry_delay(0.01, 1), 0.01)


class FakeClient:
    """Stands in for Client in the keep-alive tests: renew_once answers as
    scripted."""

    timeout = 1.0

    def __init__(self, renew: Any):
        self.renew = renew
        self.renewals: List[float] = []
        self.loads: List[Optional[float]] = []
        self.released: List[Tuple[str, int]] = []

    def renew_once(self, key: str, token: int, holder: Optional[str] = None,
                   attempt_timeout: Optional[float] = None, deadline: Optional[float] = None,
                   load: Optional[float] = None) -> Any:
        sent = time.monotonic()
        self.renewals.append(sent)
        self.loads.append(load)
        return self.renew(sent)

    def release_once(self, key: str, token: int, holder: Optional[str] = None,
                     deadline: Optional[float] = None) -> bool:
        self.released.append((key, token))
        return True


def ok(sent: float) -> Any:
    return {"key": "k", "token": 7, "state": "held"}, tenure.Answer(200, None, {}, "fake", sent)


def wait_until(cond: Any, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return False


def unavailable(sent: float) -> Any:
    raise tenure.UnavailableError("no server answered")


class KeepAlive(unittest.TestCase):
    def lease(self, fake: FakeClient, ttl: float, sent_at: float, on_lost: Any = None) -> Lease:
        l = Lease(fake, "k", "h", {"key": "k", "token": 7}, ttl, tenure.default_margin(ttl), sent_at, on_lost=on_lost)
        l._start()
        self.addCleanup(l._end, "released", tenure.ReleasedError("test ended"))
        return l

    def test_loads_ride_on_renewals_and_are_dropped_when_refused(self) -> None:
        # A reported load goes with every renewal; a server older than load
        # reports refuses the field: the renewal is sent again without it
        # (the lease is not lost) and loads are not sent again.
        old_server = threading.Event()

        def renew(sent: float) -> Any:
            if old_server.is_set() and fake.loads[-1] is not None:
                raise tenure.BadRequestError(400, "invalid_body", "unknown field", field="load")
            return ok(sent)
        fake = FakeClient(renew)
        l = self.lease(fake, 0.6, time.monotonic())
        with self.assertRaises(tenure.InvalidError):
            l.report_load(-1.0)
        l.report_load(12.5)
        self.assertTrue(wait_until(lambda: 12.5 in fake.loads, 2.0), "no renewal carried the load")
        old_server.set()
        n = len(fake.loads)
        self.assertTrue(wait_until(lambda: len(fake.loads) >= n + 4, 3.0), "renewals stopped")
        self.assertTrue(l.valid(), "the lease was lost over a refused load: %s" % l.error)
        self.assertIsNone(fake.loads[-1], "loads still sent after the server refused them")
        l.report_load(3.0)
        n = len(fake.loads)
        self.assertTrue(wait_until(lambda: len(fake.loads) >= n + 2, 2.0))
        self.assertIsNone(fake.loads[-1], "a new report was sent to a server that refuses loads")

    def test_deadline_is_send_time_plus_ttl_minus_margin(self) -> None:
        sent = time.monotonic() - 0.05
        l = self.lease(FakeClient(ok), 3.0, sent)
        self.assertAlmostEqual(l.deadline, sent + 3.0 - 0.3, places=6)

    def test_renewals_move_the_deadline(self) -> None:
        fake = FakeClient(ok)
        l = self.lease(fake, 0.6, time.monotonic())
        time.sleep(1.5)
        self.assertTrue(l.valid(), "lease lost while renewals succeed: %s" % l.error)
        self.assertGreaterEqual(len(fake.renewals), 4, "renewals every ttl/3 over 2.5 ttls")
        last = fake.renewals[-1]
        self.assertAlmostEqual(l.deadline, last + 0.6 - 0.1, places=6)

    def test_deadline_counts_from_the_send_time_of_a_slow_renewal(self) -> None:
        # A renewal answered 300ms after it was sent: the deadline counts
        # from when it was sent, not from the answer.
        def slow(sent: float) -> Any:
            time.sleep(0.3)
            return ok(sent)
        fake = FakeClient(slow)
        l = self.lease(fake, 1.2, time.monotonic())
        first = l.deadline
        self.assertTrue(wait_until(lambda: l.deadline != first, 2.0), "no renewal applied")
        self.assertAlmostEqual(l.deadline, fake.renewals[0] + 1.2 - 0.12, places=6)

    def test_invalid_once_the_deadline_passes_without_renewal(self) -> None:
        lost = threading.Event()
        errors: List[BaseException] = []
        fake = FakeClient(unavailable)
        start = time.monotonic()
        l = self.lease(fake, 1.0, start, on_lost=lambda lease, err: (errors.append(err), lost.set()))
        self.assertTrue(l.valid())
        self.assertTrue(lost.wait(3.0), "on_lost not called after the deadline")
        took = time.monotonic() - start
        self.assertGreaterEqual(took, 0.9 - 0.001, "lost before the deadline (ttl 1s, margin 100ms)")
        self.assertLess(took, 0.9 + 0.4, "lost long after the deadline")
        self.assertFalse(l.valid())
        self.assertTrue(l.done.is_set())
        self.assertIsInstance(errors[0], tenure.LeaseExpiredLocally)
        self.assertIsInstance(l.error, tenure.LeaseExpiredLocally)
        self.assertGreater(len(fake.renewals), 1, "transient failures are retried")

    def test_valid_checks_the_deadline_itself(self) -> None:
        # A lease whose deadline is already past (the process was paused)
        # is invalid at the first check, before the keep-alive runs.
        fake = FakeClient(ok)
        l = Lease(fake, "k", "h", {"token": 7}, 1.0, 0.1, time.monotonic() - 5.0)
        self.assertFalse(l.valid())
        self.assertIsInstance(l.error, tenure.LeaseExpiredLocally)

    def test_refused_renewal_loses_the_lease(self) -> None:
        def refuse(sent: float) -> Any:
            raise tenure.LeaseLostError(404, "lease_lost", "expired", reason="expired")
        l = self.lease(FakeClient(refuse), 0.6, time.monotonic())
        self.assertTrue(l.wait_lost(2.0))
        self.assertIsInstance(l.error, tenure.LeaseLostError)
        self.assertEqual(l.error.reason, "expired")

    def test_late_answer_does_not_revive(self) -> None:
        fake = FakeClient(ok)
        l = Lease(fake, "k", "h", {"token": 7}, 1.0, 0.1, time.monotonic() - 5.0)
        self.assertFalse(l._apply_renewal({"token": 7}, time.monotonic()))
        self.assertFalse(l.valid())


class Hooks(unittest.TestCase):
    def lease(self, fake: Any, ttl: float, **kw: Any) -> Lease:
        l = Lease(fake, "k", "h", {"key": "k", "token": 7}, ttl, tenure.default_margin(ttl), time.monotonic(), **kw)
        l._start()
        self.addCleanup(l._end, "released", tenure.ReleasedError("test ended"))
        return l

    def test_renewed_and_renew_failed(self) -> None:
        calls: List[Tuple[str, Any]] = []
        answers = [ok, unavailable, ok]

        def script(sent: float) -> Any:
            return (answers.pop(0) if answers else ok)(sent)
        l = self.lease(FakeClient(script), 0.6, on_renewed=lambda lease, lat: calls.append(("renewed", lat)),
                       on_renew_failed=lambda lease, err: calls.append(("failed", err)))
        self.assertTrue(wait_until(lambda: len(calls) >= 3, 2.0), calls)
        self.assertEqual([c[0] for c in calls[:3]], ["renewed", "failed", "renewed"])
        self.assertIsInstance(calls[1][1], tenure.UnavailableError)
        self.assertGreaterEqual(calls[0][1], 0.0)
        self.assertTrue(l.valid(), "a transient failure leaves the lease held")

    def test_hung_renewal_is_reported_within_an_interval(self) -> None:
        # The renewal's deadline is one interval away, not the lease's
        # deadline: a renewal that hangs (here, the fake honours the
        # deadline like the client's retries do) is reported while held.
        failed = threading.Event()
        deadlines: List[float] = []

        class Hung(FakeClient):
            def renew_once(self, key: str, token: int, holder: Optional[str] = None,
                           attempt_timeout: Optional[float] = None, deadline: Optional[float] = None) -> Any:
                assert deadline is not None
                deadlines.append(deadline - time.monotonic())
                time.sleep(max(0.0, deadline - time.monotonic()))
                raise tenure.UnavailableError("out of time")
        l = self.lease(Hung(ok), 3.0, on_renew_failed=lambda lease, err: failed.set())
        self.assertTrue(failed.wait(3.0), "a hung renewal was not reported")
        self.assertTrue(l.valid(), "reported while the lease is still held")
        self.assertLessEqual(deadlines[0], l.interval + 0.01)

    def test_lose_on_renew_failure(self) -> None:
        lost: List[BaseException] = []
        l = self.lease(FakeClient(unavailable), 3.0, lose_on_renew_failure=True,
                       on_lost=lambda lease, err: lost.append(err))
        self.assertTrue(l.wait_lost(3.0))
        self.assertIsInstance(l.error, tenure.RenewFailedError)
        self.assertEqual(len(lost), 1)

    def test_acquire_hooks_and_renew_interval(self) -> None:
        lease = {"key": "k", "holder": "h", "token": 4, "ttl": "10s", "state": "held"}
        s = _FakeServer([(201, {}, lease), (200, {"X-Tenure-Release": "released"}, {})])
        self.addCleanup(s.close)
        c = tenure.Client([s.addr], holder="h")
        acquired: List[int] = []
        with c.acquire("k", ttl=10, renew_interval=2, on_acquired=lambda l: acquired.append(l.token)) as l:
            self.assertEqual((acquired, l.interval), ([4], 2))
        for bad in (0.4, 4.6):  # below ttl/20, above (ttl - margin)/2
            with self.subTest(bad=bad), self.assertRaises(tenure.InvalidError) as cm:
                c.acquire("k", ttl=10, renew_interval=bad)
            self.assertIn("renew_interval", str(cm.exception))


class Fencing(unittest.TestCase):
    def test_local_validator(self) -> None:
        v = tenure.FenceValidator()
        steps = [  # (name, key, token, want accepted)
            ("first token", "k", 5, True),
            ("same token again", "k", 5, True),
            ("newer holder", "k", 9, True),
            ("paused old holder wakes up", "k", 5, False),
            ("other key unaffected", "j", 1, True),
            ("still the newer holder", "k", 9, True),
        ]
        for name, key, token, want in steps:
            with self.subTest(name):
                self.assertEqual(v.accept(key, token), want, "accept(%r, %d)" % (key, token))
        self.assertEqual(v.highest("k"), 9)
        with self.assertRaises(tenure.StaleTokenError) as cm:
            v.check("k", 8)
        self.assertEqual((cm.exception.token, cm.exception.latest), (8, 9))
        with self.assertRaises(tenure.InvalidError):
            v.check("k", 0)

    def test_cached_when_unreachable(self) -> None:
        class Cluster:
            def __init__(self) -> None:
                self.down = False

            def get_lease(self, key: str) -> Optional[Dict[str, Any]]:
                if self.down:
                    raise tenure.UnavailableError("no server answered")
                return {"key": key, "token": 5}

        cluster = Cluster()
        cached = tenure.FenceValidator(cluster, refresh_after=0, cache_when_unreachable=60)  # type: ignore[arg-type]
        plain = tenure.FenceValidator(cluster, refresh_after=0)  # type: ignore[arg-type]
        for v in (cached, plain):
            v.check("k", 5)
        cluster.down = True
        cached.check("k", 5)  # the cached token, from the cache
        with self.assertRaises(tenure.StaleTokenError):
            cached.check("k", 4)
        with self.assertRaises(tenure.UnavailableError):
            cached.check("k", 6)  # undecided
        with self.assertRaises(tenure.UnavailableError):
            plain.check("k", 5)  # without the option, nothing is decided
        with cached._mu:
            token, confirmed = cached._seen["k"]
            cached._seen["k"] = (token, confirmed - 60)
        with self.assertRaises(tenure.UnavailableError):
            cached.check("k", 5)  # older than its age
        for age in (-1, tenure.MAX_FENCE_CACHE_AGE + 1):
            with self.subTest(age=age), self.assertRaises(tenure.InvalidError) as cm:
                tenure.FenceValidator(cluster, cache_when_unreachable=age)  # type: ignore[arg-type]
            self.assertIn("cache_when_unreachable", str(cm.exception))

    def test_concurrent_writers(self) -> None:
        v = tenure.FenceValidator()
        accepted: List[int] = []
        mu = threading.Lock()

        def write(token: int) -> None:
            if v.accept("k", token):
                with mu:
                    accepted.append(token)
        threads = [threading.Thread(target=write, args=(t,)) for t in range(1, 50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # Whatever the order, 49 is accepted, and every accepted token was
        # at least the highest accepted before it.
        self.assertIn(49, accepted)
        self.assertEqual(v.highest("k"), 49)


class Durations(unittest.TestCase):
    def test_round_trip(self) -> None:
        cases = [("10s", 10.0), ("500ms", 0.5), ("1m30s", 90.0), ("9.2s", 9.2), ("0s", 0.0),
                 ("1h2m3.5s", 3723.5), ("-2ms", -0.002), ("1.5\u00b5s", 1.5e-6), ("0", 0.0)]
        for text, want in cases:
            with self.subTest(text):
                self.assertAlmostEqual(tenure.parse_duration(text), want)
        self.assertEqual(tenure.format_duration(10), "10s")
        self.assertEqual(tenure.format_duration(2.5), "2500ms")
        for bad in ("", "5", "1x", "s"):
            with self.subTest(bad), self.assertRaises(ValueError):
                tenure.parse_duration(bad)


class Errors(unittest.TestCase):
    def test_codes_become_classes(self) -> None:
        from tenure.errors import error_from_answer
        e = error_from_answer(409, {"error": "held", "message": "held by b", "lease": {"holder": "b", "token": 3}}, 0)
        self.assertIsInstance(e, tenure.HeldError)
        self.assertEqual((e.status, e.code, e.lease["holder"]), (409, "held", "b"))
        e = error_from_answer(400, {"error": "invalid_ttl", "message": "too short", "field": "ttl"}, 0)
        self.assertIsInstance(e, tenure.BadRequestError)
        self.assertEqual((e.code, e.field), ("invalid_ttl", "ttl"))
        e = error_from_answer(502, "<html>bad gateway</html>", 0)
        self.assertEqual((e.code, e.message), ("", "<html>bad gateway</html>"))

    def test_classify(self) -> None:
        from tenure.errors import error_from_answer
        cases = [  # (name, error, idempotent, want (retry, conn_err, retry_after))
            ("refused", _TransportError(ConnectionRefusedError(), True, False), False, (True, True, 0.0)),
            ("broken, unsafe", _TransportError(ConnectionResetError(), False, False), False, (False, True, 0.0)),
            ("429 honours Retry-After", error_from_answer(429, {"error": "overloaded"}, 2.0), True, (True, False, 2.0)),
            ("503 too_many_connections honours it", error_from_answer(503, {"error": "too_many_connections"}, 1.0), True, (True, False, 1.0)),
            ("503 no_leader starts fast", error_from_answer(503, {"error": "no_leader"}, 1.0), True, (True, False, 0.0)),
            ("409 held is final", error_from_answer(409, {"error": "held"}, 0), True, (False, False, 0.0)),
        ]
        for name, err, idem, want in cases:
            with self.subTest(name):
                self.assertEqual(classify(err, idem), want)

    def test_backoff_honours_retry_after(self) -> None:
        c = tenure.Client("127.0.0.1:1")
        for attempt in range(1, 8):
            self.assertLessEqual(c.backoff(attempt), min(2.0, 0.025 * 2 ** (attempt - 1)))
            self.assertGreaterEqual(c.backoff(attempt, 1.5), 1.5)


class Routing(unittest.TestCase):
    def test_router(self) -> None:
        seeds = ["http://a:1", "http://b:1", "http://c:1"]
        r = Router(seeds)
        self.assertEqual(r.pick(), "http://a:1")
        r.answered("http://a:1", "c:1")  # a configured leader is followed
        self.assertEqual(r.pick(), "http://c:1")
        r.answered("http://c:1", "evil:1")  # an unknown one is not
        self.assertEqual(r.pick(), "http://c:1")
        r.failed("http://c:1", "", True)  # next seed after a failure
        self.assertEqual(r.pick(), "http://a:1")
        r.failed("http://a:1", "c:1", False)  # c failed to connect: not followed
        self.assertEqual(r.pick(), "http://b:1")
        trusting = Router(["https://a:1"], lambda leader: leader.startswith("https://"))
        trusting.answered("https://a:1", "d:1")
        self.assertEqual(trusting.pick(), "https://d:1")

    def test_addresses(self) -> None:
        self.assertEqual(tenure.normalize_address("127.0.0.1:7500", "http"), "http://127.0.0.1:7500")
        self.assertEqual(tenure.normalize_address("https://h:1/", "http"), "https://h:1")
        for bad in ("", "ftp://h:1", "http://h:1/path"):
            with self.subTest(bad), self.assertRaises(tenure.InvalidError):
                tenure.normalize_address(bad, "http")


class _FakeServer:
    """A loopback HTTP server answering from a script of (status, headers,
    body) per request."""

    def __init__(self, script: List[Tuple[int, Dict[str, str], Any]]):
        self.script = list(script)
        self.paths: List[str] = []
        self.headers: List[Dict[str, str]] = []
        self.bodies: List[Any] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def answer(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                owner.bodies.append(json.loads(self.rfile.read(n)) if n else None)
                owner.paths.append(self.command + " " + self.path)
                owner.headers.append(dict(self.headers))
                status, hdrs, body = owner.script.pop(0) if owner.script else (500, {}, {"error": "internal"})
                data = json.dumps(body).encode()
                self.send_response(status)
                for k, v in hdrs.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = answer

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.addr = "127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Retries(unittest.TestCase):
    def fake(self, script: List[Tuple[int, Dict[str, str], Any]]) -> _FakeServer:
        s = _FakeServer(script)
        self.addCleanup(s.close)
        return s

    def test_not_leader_moves_to_the_hinted_server_with_the_token(self) -> None:
        lease = {"key": "k", "holder": "h", "token": 4, "ttl": "2s", "state": "held"}
        leader = self.fake([(201, {}, lease)])
        follower = self.fake([(503, {"Retry-After": "1", "X-Tenure-Leader-Addr": leader.addr},
                               {"error": "no_leader", "message": "not the leader"})])
        decoy = self.fake([(500, {}, {"error": "internal", "message": "the next address, not the leader"})])
        c = tenure.Client([follower.addr, decoy.addr, leader.addr], token="s3cret", holder="h")
        start = time.monotonic()
        info, ans = c.acquire_once("k", ttl=2.0)
        self.assertEqual((ans.status, info["token"], ans.address), (201, 4, "http://" + leader.addr))
        self.assertLess(time.monotonic() - start, 0.9, "a no_leader's Retry-After of whole seconds is not waited for")
        self.assertEqual(leader.paths, ["PUT /v1/leases/k"])
        self.assertEqual(decoy.paths, [], "the hinted leader is tried before the next address")
        self.assertEqual(leader.headers[0].get("X-Tenure-Token"), "s3cret")

    def test_429_waits_retry_after(self) -> None:
        s = self.fake([(429, {"Retry-After": "1"}, {"error": "overloaded", "message": "busy"}),
                       (200, {}, {"key": "k", "token": 1, "state": "held"})])
        c = tenure.Client([s.addr])
        start = time.monotonic()
        c.renew_once("k", 1, "h")
        self.assertGreaterEqual(time.monotonic() - start, 1.0, "Retry-After: 1 not honoured")

    def test_error_carries_code_field_and_message(self) -> None:
        s = self.fake([(400, {}, {"error": "invalid_ttl", "message": "ttl 1ms below min-ttl 1s", "field": "ttl"})])
        c = tenure.Client([s.addr])
        with self.assertRaises(tenure.BadRequestError) as cm:
            c.acquire_once("k", "h", ttl=0.001)
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.field), (400, "invalid_ttl", "ttl"))
        self.assertIn("min-ttl", cm.exception.message)

    def test_gives_up_when_nobody_answers(self) -> None:
        c = tenure.Client(["127.0.0.1:1"], timeout=0.5, retry_max=2)
        start = time.monotonic()
        with self.assertRaises(tenure.UnavailableError):
            c.get_lease("k")
        self.assertLess(time.monotonic() - start, 5.0)


class Fake(unittest.TestCase):
    def fake(self, script: List[Tuple[int, Dict[str, str], Any]]) -> _FakeServer:
        s = _FakeServer(script)
        self.addCleanup(s.close)
        return s


def _held(holder: str, token: int, **meta: str) -> Dict[str, Any]:
    return {"key": "elections/e", "holder": holder, "token": token, "state": "held", "metadata": meta}


class Observe(Fake):
    def test_follows_the_leader_with_blocking_reads(self) -> None:
        s = self.fake([
            (404, {"X-Tenure-Index": "3"}, {"error": "not_found", "message": "never seen"}),
            (200, {"X-Tenure-Index": "5"}, _held("a", 1, addr="a:1")),
            (200, {"X-Tenure-Index": "5"}, _held("a", 1, addr="a:1")),  # the wait ended, no change
            (200, {"X-Tenure-Index": "6"}, _held("a", 1, addr="a:2")),  # metadata only: no new leader
            (503, {}, {"error": "no_leader", "message": "election"}),  # retried
            (200, {"X-Tenure-Index": "8"}, {"key": "elections/e", "token": 1, "state": "free"}),
            (200, {"X-Tenure-Index": "9"}, _held("b", 2)),
        ])
        c = tenure.Client([s.addr], retry_max=0)
        stop = threading.Event()
        seen: List[Optional[Dict[str, Any]]] = []
        for info in c.election("e").observe(stop, wait=30):
            seen.append(info)
            if len(seen) == 4:
                stop.set()
        self.assertEqual(seen, [None, {"holder": "a", "token": 1, "metadata": {"addr": "a:1"}}, None,
                                {"holder": "b", "token": 2, "metadata": {}}])
        self.assertEqual(s.paths[0], "GET /v1/leases/elections/e", "the first read does not block")
        self.assertEqual(s.paths[1], "GET /v1/leases/elections/e?index=3&wait=30s")
        self.assertEqual(s.paths[2], "GET /v1/leases/elections/e?index=5&wait=30s")
        self.assertEqual(s.paths[-1], "GET /v1/leases/elections/e?index=8&wait=30s",
                         "after a failure it blocks on the last index again")

    def test_refused_query_is_raised_and_callback_form(self) -> None:
        s = self.fake([(200, {"X-Tenure-Index": "5"}, _held("a", 1)),
                       (400, {}, {"error": "invalid_key", "message": "bad key"}),
                       (400, {}, {"error": "invalid_key", "message": "bad key"})])
        c = tenure.Client([s.addr])
        got: List[Optional[Dict[str, Any]]] = []
        stop = threading.Event()
        t = c.election("e").on_leader_change(got.append, stop, wait=1)
        t.join(5)
        self.assertFalse(t.is_alive(), "a refused query ends the observer")
        self.assertEqual(got, [{"holder": "a", "token": 1, "metadata": {}}])
        with self.assertRaises(tenure.BadRequestError):
            list(c.election("e").observe(stop))

    def test_logs_leadership_changes(self) -> None:
        lease = _held("h", 4)
        lease["ttl"] = "10s"
        s = self.fake([(503, {}, {"error": "no_leader", "message": "election"}), (201, {}, lease),
                       (200, {"X-Tenure-Release": "released"}, {})])
        c = tenure.Client([s.addr], holder="h", retry_max=0)
        with self.assertLogs("tenure", "INFO") as logs:
            e = c.election("e")
            l = e.campaign()
            assert l is not None
            e.resign(l)
        text = "\n".join(logs.output)
        self.assertIn("WARNING:tenure.lease:leader_acquire_failed election=e", text)
        self.assertIn("INFO:tenure.election:leader_acquired election=e key=elections/e holder=h token=4", text)
        self.assertIn("INFO:tenure.election:leader_resigned election=e", text)


class Events(Fake):
    def test_events_query_and_answer(self) -> None:
        evs = [{"index": 4, "type": "acquired", "key": "jobs/a", "holder": "h", "token": 1}]
        s = self.fake([(200, {}, {"events": evs, "index": 9})])
        c = tenure.Client([s.addr])
        got, nxt = c.events(3, types=["acquired", "ending"], prefix="jobs/", limit=10, wait=2)
        self.assertEqual((got, nxt), (evs, 9))
        self.assertEqual(s.paths, ["GET /v1/events?index=3&limit=10&prefix=jobs%2F&type=acquired%2Cending&wait=2s"])

    def test_watch_follows_each_event_once_across_failures(self) -> None:
        s = self.fake([
            (200, {}, {"events": [{"index": 2, "type": "acquired"}, {"index": 3, "type": "ending"}], "index": 3}),
            (503, {}, {"error": "no_leader", "message": "election"}),
            (200, {}, {"events": [{"index": 3, "type": "ending"}, {"index": 5, "type": "revoked"}], "index": 7}),
            (410, {}, {"error": "compacted", "message": "gone", "oldest_index": 100}),
        ])
        c = tenure.Client([s.addr], retry_max=0)
        seen: List[int] = []
        with self.assertRaises(tenure.CompactedError) as cm:
            for ev in c.watch_events(1, wait=1):
                seen.append(ev["index"])
        self.assertEqual(seen, [2, 3, 5], "each event once, in order")
        self.assertEqual(cm.exception.oldest_index, 100)
        self.assertEqual([p.split("?")[1] for p in s.paths],
                         ["index=1&wait=1s", "index=3&wait=1s", "index=3&wait=1s", "index=7&wait=1s"])

    def test_watch_stops(self) -> None:
        s = self.fake([(200, {}, {"events": [{"index": 2}, {"index": 3}], "index": 3})])
        stop = threading.Event()
        seen = []
        for ev in tenure.Client([s.addr]).watch_events(0, stop=stop):
            seen.append(ev["index"])
            stop.set()
        self.assertEqual(seen, [2])


class Groups(Fake):
    def test_calls(self) -> None:
        summary = {"name": "g", "keys": 2, "modify_index": 4}
        s = self.fake([
            (200, {}, summary), (200, {}, summary), (200, {}, summary), (200, {}, summary),
            (200, {}, summary), (200, {}, summary),
            (200, {}, {"groups": [{"name": "a"}], "next": "c1"}), (200, {}, {"groups": [{"name": "g"}]}),
            (200, {}, {"name": "g", "keys": [{"key": "k1"}], "next": "x"}),
            (200, {}, {"name": "g", "keys": [{"key": "k2"}], "workers": []}),
            (204, {}, None), (404, {}, {"error": "not_found", "message": "no group"}),
            (404, {}, {"error": "not_found", "message": "no group"}),
            (200, {}, {"key": "k", "disabled": True, "prohibited": ["x"]}),
            (200, {}, {"key": "k", "disabled": False, "prohibited": []}),
        ])
        c = tenure.Client([s.addr])
        self.assertEqual(c.put_group("g", keys=["k1", "k2"], max_per_worker=3, stuck_grace=2), summary)
        c.replace_group("g", prefix="p/", count=2)
        c.put_group_cas("g", 4, keys=["k1"])
        c.add_remove_keys("g", add=["k3"], remove=["k1"])
        c.set_group_keys("g", ["k1", "k2"])
        c.set_max_per_worker("g", 5)
        self.assertEqual([g["name"] for g in c.list_groups()], ["a", "g"])
        g = c.get_group("g")
        assert g is not None
        self.assertEqual([k["key"] for k in g["keys"]], ["k1", "k2"], "every page")
        self.assertTrue(c.delete_group("g"))
        self.assertFalse(c.delete_group("g"))
        self.assertIsNone(c.get_group("g"))
        c.edit_controls("k", disabled=True, prohibit=["x"], force=True)
        c.edit_controls("k", disabled=False, allow=["x"])
        self.assertEqual(s.paths[:6], ["PUT /v1/groups/g", "PUT /v1/groups/g?replace=true", "PUT /v1/groups/g?cas=4",
                                       "POST /v1/groups/g/keys", "PUT /v1/groups/g/keys",
                                       "PUT /v1/groups/g/max-per-worker"])
        self.assertEqual(s.bodies[:6], [{"keys": ["k1", "k2"], "max_per_worker": 3, "stuck_grace": "2s"},
                                        {"prefix": "p/", "count": 2}, {"keys": ["k1"]},
                                        {"add": ["k3"], "remove": ["k1"]}, {"keys": ["k1", "k2"]},
                                        {"max_per_worker": 5}])
        self.assertEqual(s.paths[6:], ["GET /v1/groups", "GET /v1/groups?cursor=c1", "GET /v1/groups/g",
                                       "GET /v1/groups/g?cursor=x", "DELETE /v1/groups/g", "DELETE /v1/groups/g",
                                       "GET /v1/groups/g", "PATCH /v1/controls/k?force=true",
                                       "PATCH /v1/controls/k"])
        self.assertEqual(s.bodies[-2:], [{"disabled": True, "prohibit": ["x"]}, {"disabled": False, "allow": ["x"]}])
        with self.assertRaises(tenure.InvalidError):
            c.put_group("g", keys=[], replace=True, cas=1)


class Async(unittest.IsolatedAsyncioTestCase):
    def fake(self, script: List[Tuple[int, Dict[str, str], Any]]) -> _FakeServer:
        s = _FakeServer(script)
        self.addCleanup(s.close)
        return s

    async def test_acquire_context_and_loss(self) -> None:
        lease = {"key": "k", "holder": "h", "token": 4, "ttl": "10s", "state": "held"}
        s = self.fake([(201, {}, lease), (200, {"X-Tenure-Release": "released"}, {})])
        c = AsyncClient(holder="h", addresses=[s.addr])
        async with c.acquire("k", ttl=10, metadata={"a": "b"}) as l:
            self.assertEqual((l.token, l.valid()), (4, True))
        self.assertIsInstance(await asyncio.wait_for(l.wait_lost(), 2), tenure.ReleasedError)
        self.assertEqual(s.paths, ["PUT /v1/leases/k", "DELETE /v1/leases/k"])
        self.assertEqual(s.bodies[0]["metadata"], {"a": "b"})

        def refuse(sent: float) -> Any:
            raise tenure.LeaseLostError(404, "lease_lost", "revoked", reason="revoked")
        threaded = Lease(FakeClient(refuse), "k", "h", {"token": 7}, 0.6, 0.1, time.monotonic())
        threaded._start()
        err = await asyncio.wait_for(AsyncLease(threaded).wait_lost(), 3)
        self.assertIsInstance(err, tenure.LeaseLostError)

    async def test_cancel_a_waiting_campaign(self) -> None:
        s = self.fake([(409, {}, {"error": "held", "message": "held", "lease": _held("a", 1)})] * 50)
        c = AsyncClient(addresses=[s.addr], holder="h")
        task = asyncio.ensure_future(c.election("e", wait_chunk=0.2).campaign())
        await asyncio.sleep(0.3)
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task

    async def test_observe_watch_and_plain_calls(self) -> None:
        # Leaving an async for stops its thread after its read in flight:
        # each follow has a server of its own.
        s = self.fake([(200, {"X-Tenure-Index": "5"}, _held("a", 1)), (200, {"X-Tenure-Index": "7"}, _held("b", 2))])
        c = AsyncClient(addresses=[s.addr])
        leaders = []
        async for info in c.election("e").observe(wait=1):
            leaders.append(info)
            if len(leaders) == 2:
                break
        self.assertEqual([i["holder"] if i else None for i in leaders], ["a", "b"])
        s = self.fake([(200, {}, {"events": [{"index": 2, "type": "acquired"}, {"index": 3, "type": "released"}],
                                  "index": 3})])
        c = AsyncClient(addresses=[s.addr])
        events = []
        async for ev in c.watch_events(1, wait=1):
            events.append(ev["index"])
            if ev["index"] == 3:
                break
        self.assertEqual(events, [2, 3])
        s = self.fake([(200, {}, {"key": "k", "token": 3, "state": "free"})])
        c = AsyncClient(addresses=[s.addr])
        self.assertEqual(await c.get_lease("k"), {"key": "k", "token": 3, "state": "free"})


if __name__ == "__main__":
    unittest.main()
