"""Leader failover: the Raft leader's process is killed while a kept-alive
lease is held. Runs after test_cluster (file order); later tests run on
the two servers left."""

from __future__ import annotations

import os
import signal
import time

import tenure

from .cluster import ClusterTest, server_pids, wait_for


class Failover(ClusterTest):
    def test_lease_survives_killing_the_leader(self) -> None:
        pids = server_pids()
        if len(pids) < 3:
            self.skipTest("TENURE_TEST_SERVER_PIDS does not name three servers")
        c = self.client()
        key = self.key("failover")
        lease = self.track(c.acquire(key, ttl=4.0))
        st = c.status()
        leader = st.get("leader_http_addr", "")
        pid = next((p for a, p in pids.items() if a.endswith("//" + leader) or a == leader), None)
        self.assertIsNotNone(pid, "leader %r not among %r" % (leader, pids))
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()

        def new_leader() -> bool:
            s = self.client().status()
            return bool(s.get("leader_http_addr")) and s["leader_http_addr"] != leader and s.get("role") in ("leader", "follower")
        wait_for("a new leader", new_leader, 15.0, 0.2)
        # Keep renewing through the election and beyond a TTL after it.
        time.sleep(max(0.0, killed + 5.0 - time.monotonic()))
        self.assertTrue(lease.valid(), "the lease was lost in the failover: %s" % lease.error)
        cur = self.client().get_lease(key)
        self.assertEqual((cur["state"], cur["holder"], cur["token"]), ("held", c.holder, lease.token))
        # Writes work on the new leader.
        other = self.track(self.client().acquire(self.key("after-failover"), ttl=2.0))
        self.assertGreater(other.token, lease.token)
        lease.release()
