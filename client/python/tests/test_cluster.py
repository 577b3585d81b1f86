"""The client against a real three-node cluster (TLS and ACLs on when the
Go test starts it so): see tests/cluster.py."""

from __future__ import annotations

import threading
import time
from typing import List, Tuple

import tenure

from .cluster import ClusterTest, wait_for


class Leases(ClusterTest):
    def test_acquire_renew_release(self) -> None:
        c = self.client()
        key = self.key("basic")
        info, ans = c.acquire_once(key, ttl=5.0, metadata={"zone": "a"})
        self.assertEqual(ans.status, 201, "a new grant")
        self.assertEqual((info["holder"], info["state"], info["metadata"]), (c.holder, "held", {"zone": "a"}))
        token = info["token"]
        self.assertGreater(token, 0)
        again, ans = c.acquire_once(key, ttl=5.0)
        self.assertEqual((ans.status, again["token"]), (200, token), "a retry by the holder: the same lease")
        renewed, _ = c.renew_once(key, token)
        self.assertEqual((renewed["token"], renewed["state"]), (token, "held"))
        self.assertTrue(c.release_once(key, token), "the release freed it")
        self.assertFalse(c.release_once(key, token), "a second release finds it gone (safe to retry)")
        cur = c.get_lease(key)
        self.assertEqual((cur["state"], cur["token"], cur["reason"]), ("free", token, "released"))
        with self.assertRaises(tenure.LeaseLostError) as cm:
            c.renew_once(key, token)
        self.assertEqual((cm.exception.code, cm.exception.reason), ("lease_lost", "released"))
        self.assertIsNone(c.get_lease(self.key("never")), "a key never seen")

    def test_held_conflict_and_other_errors(self) -> None:
        a, b = self.client(), self.client()
        key = self.key("held")
        lease = self.track(a.acquire(key, ttl=5.0))
        with self.assertRaises(tenure.HeldError) as cm:
            b.acquire(key, ttl=5.0)
        e = cm.exception
        self.assertEqual((e.status, e.code), (409, "held"))
        self.assertEqual((e.lease["holder"], e.lease["token"]), (a.holder, lease.token), "the current lease")
        self.assertIn(a.holder, e.message)
        with self.assertRaises(tenure.DuplicateLeaseError):
            a.acquire(key, ttl=5.0)  # a second keep-alive of the same lease
        lease.release()
        again = self.track(a.acquire(key, ttl=5.0))
        self.assertGreater(again.token, lease.token, "a new grant after the release")
        with self.assertRaises(tenure.BadRequestError) as cm2:
            b.acquire_once(self.key("ttl"), ttl=0.01)
        self.assertEqual((cm2.exception.code, cm2.exception.field), ("invalid_ttl", "ttl"))
        with self.assertRaises(tenure.PermissionDeniedError) as cm3:
            b.acquire_once("outside/the/prefix", ttl=5.0)
        self.assertEqual((cm3.exception.status, cm3.exception.code), (403, "permission_denied"))

    def test_holder_name_is_not_enough(self) -> None:
        # Another client under the same holder name (and ACL token) has
        # another lease secret: it learns the holder and the token from a
        # read, and still cannot take, renew or release the lease.
        a = self.client()
        b = self.client(holder=a.holder)
        self.assertNotEqual(a.lease_secret, b.lease_secret)
        key = self.key("secret")
        info, _ = a.acquire_once(key, ttl=5.0, metadata={"addr": "a"})
        self.assertEqual(info["secret"], a.lease_secret, "the acquire answers the lease secret")
        seen = b.get_lease(key)
        self.assertNotIn("secret", seen, "a read never shows the secret")
        with self.assertRaises(tenure.HeldError) as cm:
            b.acquire_once(key, ttl=5.0, metadata={"addr": "b"})
        self.assertEqual(cm.exception.field, "secret")
        with self.assertRaises(tenure.WrongSecretError):
            b.renew_once(key, seen["token"])
        with self.assertRaises(tenure.WrongSecretError):
            b.release_once(key, seen["token"])
        cur = a.get_lease(key)
        self.assertEqual((cur["state"], cur["token"], cur["metadata"]), ("held", info["token"], {"addr": "a"}))
        again, ans = a.acquire_once(key, ttl=5.0)
        self.assertEqual((ans.status, again["token"]), (200, info["token"]), "the acquirer's retry: the same lease")
        self.assertTrue(a.release_once(key, info["token"]))

    def test_blocking_acquire_is_granted_on_release(self) -> None:
        a, b = self.client(), self.client()
        key = self.key("wait")
        first = self.track(a.acquire(key, ttl=5.0))
        got: List[tenure.Lease] = []
        t = threading.Thread(target=lambda: got.append(b.acquire(key, ttl=5.0, wait=10.0)))
        t.start()
        time.sleep(0.3)
        released = time.monotonic()
        first.release()
        t.join(10.0)
        self.assertTrue(got, "the waiter was not granted the key")
        second = self.track(got[0])
        self.assertLess(time.monotonic() - released, 2.0, "granted at the release, not after a TTL")
        self.assertGreater(second.token, first.token)
        self.assertTrue(second.valid())

    def test_keepalive_across_several_ttls(self) -> None:
        c = self.client()
        key = self.key("keepalive")
        lease = self.track(c.acquire(key, ttl=1.0))
        first_deadline = lease.deadline
        time.sleep(3.5)
        self.assertTrue(lease.valid(), "lost while kept alive: %s" % lease.error)
        self.assertGreater(lease.deadline, first_deadline + 2.0, "renewals moved the deadline")
        cur = self.client().get_lease(key)
        self.assertEqual((cur["state"], cur["holder"], cur["token"]), ("held", c.holder, lease.token))
        lease.release()
        self.assertFalse(lease.valid())
        self.assertIsInstance(lease.error, tenure.ReleasedError)

    def test_revoked_lease_turns_invalid_and_tells(self) -> None:
        c = self.client()
        key = self.key("revoke")
        lost = threading.Event()
        why: List[BaseException] = []
        lease = self.track(c.acquire(key, ttl=1.5, on_lost=lambda l, err: (why.append(err), lost.set())))
        self.assertTrue(lease.valid())
        revoked = self.admin().revoke(key)
        self.assertEqual(revoked[0]["token"], lease.token)
        # The next renewal (every TTL/3) is refused.
        self.assertTrue(lost.wait(3.0), "on_lost not called after a revoke")
        self.assertFalse(lease.valid())
        self.assertTrue(lease.done.is_set())
        self.assertIsInstance(why[0], tenure.LeaseLostError)
        self.assertEqual(why[0].reason, "revoked")

    def test_local_deadline_passes_when_renewals_stop(self) -> None:
        # The holder is cut off from the cluster: its renewals fail, and it
        # stops treating itself as holder at send time + TTL - margin, while
        # the cluster still holds the lease for it (no one else can have it).
        c = self.client()
        key = self.key("cutoff")
        lease = self.track(c.acquire(key, ttl=3.0, margin=0.6))
        dead = tenure.Router(["https://127.0.0.1:1" if c.router.seeds[0].startswith("https") else "http://127.0.0.1:1"])
        c.router = dead  # every renewal from now on fails to connect
        deadline = lease.deadline
        self.assertTrue(lease.wait_lost(4.0), "still valid long after its deadline")
        noticed = time.monotonic()
        self.assertIsInstance(lease.error, tenure.LeaseExpiredLocally)
        self.assertGreaterEqual(noticed, deadline, "invalid before the deadline")
        self.assertLess(noticed - deadline, 0.4, "invalid long after the deadline")
        cur = self.client().get_lease(key)
        self.assertEqual((cur["state"], cur["token"]), ("held", lease.token),
                         "the cluster freed the lease before the holder's local deadline")
        wait_for("the key frees after its TTL", lambda: self.client().get_lease(key)["state"] == "free", 5.0)


class Elections(ClusterTest):
    def test_run_hands_over_when_the_leader_resigns(self) -> None:
        name = self.key("election")
        events: List[Tuple[str, str, int, float]] = []
        mu = threading.Lock()
        stop = threading.Event()
        first_may_go = threading.Event()

        def candidate(label: str) -> None:
            def lead(lease: tenure.Lease, stop_work: threading.Event) -> None:
                with mu:
                    events.append(("start", label, lease.token, time.monotonic()))
                if label == "a" and not first_may_go.is_set():
                    first_may_go.wait(10.0)  # a leads until told to step down
                else:
                    stop_work.wait(20.0)  # b leads until leadership is lost
                with mu:
                    events.append(("end", label, lease.token, time.monotonic()))
            self.client(holder=self.holder(label)).run(name, lead, stop=stop, ttl=1.5, wait_chunk=1.0)

        ta = threading.Thread(target=candidate, args=("a",), daemon=True)
        ta.start()
        wait_for("a leads", lambda: any(e[0] == "start" for e in events), 10.0)
        tb = threading.Thread(target=candidate, args=("b",), daemon=True)
        tb.start()
        time.sleep(0.5)
        with mu:
            self.assertEqual([e[:2] for e in events], [("start", "a")], "b led while a did")
        first_may_go.set()  # a's fn returns: Run resigns, b is granted at once
        wait_for("b leads", lambda: any(e[:2] == ("start", "b") for e in events), 5.0)
        with mu:
            a_end = next(e for e in events if e[:2] == ("end", "a"))
            b_start = next(e for e in events if e[:2] == ("start", "b"))
        self.assertLess(b_start[3] - a_end[3], 1.5, "handed over at the resignation, not after a TTL")
        self.assertGreater(b_start[2], a_end[2], "the new leader's token is higher")
        # Leadership lost (an operator revokes b's lease): b's stop_work is
        # set and its fn returns.
        self.admin().revoke(tenure.election_key(name))
        wait_for("b's work stopped", lambda: any(e[:2] == ("end", "b") for e in events), 5.0)
        stop.set()
        ta.join(5.0)
        tb.join(5.0)
        self.assertFalse(ta.is_alive() or tb.is_alive(), "run did not return after stop")
        with mu:
            leading = 0
            for e in sorted(events, key=lambda e: e[3]):
                leading += 1 if e[0] == "start" else -1
                self.assertLessEqual(leading, 1, "two leaders at once: %r" % events)


class Fencing(ClusterTest):
    def test_validator_rejects_a_stale_token(self) -> None:
        old, new = self.client(), self.client()
        key = self.key("fence")
        first = old.acquire(key, ttl=5.0)
        first.release()
        second = self.track(new.acquire(key, ttl=5.0))
        self.assertGreater(second.token, first.token)
        for name, v in (("store-side", tenure.FenceValidator()),
                        ("confirmed with the cluster", tenure.FenceValidator(self.client(), refresh_after=0))):
            with self.subTest(name):
                v.check(key, second.token)
                with self.assertRaises(tenure.StaleTokenError) as cm:
                    v.check(key, first.token)
                self.assertEqual((cm.exception.token, cm.exception.latest), (first.token, second.token))
                self.assertTrue(v.accept(key, second.token))
        # The cluster-backed validator also refuses a stale token it has
        # never seen locally: the paused holder's first write.
        fresh = tenure.FenceValidator(self.client())
        self.assertFalse(fresh.accept(key, first.token))
        self.assertFalse(fresh.accept(key, second.token + 100), "a token never granted")
