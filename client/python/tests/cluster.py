"""What the cluster tests share: the cluster that test/integration's
TestPythonClient started, described by environment variables.

TENURE_HTTP_ADDR, TENURE_HTTP_TOKEN, TENURE_CACERT, TENURE_CLIENT_CERT and
TENURE_CLIENT_KEY configure the client as for the CLI. The tests also read
TENURE_TEST_ADMIN_TOKEN (a management token, for revokes) and
TENURE_TEST_SERVER_PIDS ("address=pid,..." of every server, for the
failover test). Without TENURE_HTTP_ADDR the cluster tests skip.
"""

from __future__ import annotations

import os
import time
import unittest
import uuid
from typing import Any, Callable, Dict, Optional

import tenure

ADDRS = os.environ.get(tenure.ENV_HTTP_ADDR, "")
ADMIN_TOKEN = os.environ.get("TENURE_TEST_ADMIN_TOKEN", "")


def server_pids() -> Dict[str, int]:
    out: Dict[str, int] = {}
    for part in os.environ.get("TENURE_TEST_SERVER_PIDS", "").split(","):
        if "=" in part:
            addr, pid = part.rsplit("=", 1)
            out[addr.strip()] = int(pid)
    return out


def wait_for(what: str, cond: Callable[[], Any], timeout: float, interval: float = 0.05) -> Any:
    """Polls cond until it returns something true; fails after timeout."""
    end = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < end:
        try:
            last = cond()
            if last:
                return last
        except tenure.TenureError as e:
            last = e
        time.sleep(interval)
    raise AssertionError("%s: not within %gs (last: %r)" % (what, timeout, last))


@unittest.skipUnless(ADDRS, "no cluster: run by test/integration's TestPythonClient (TENURE_HTTP_ADDR unset)")
class ClusterTest(unittest.TestCase):
    """Base class: self.client() makes clients of the test's cluster with a
    holder of its own (under the token's holder prefix "py-")."""

    def client(self, holder: Optional[str] = None, **kwargs: Any) -> tenure.Client:
        kwargs.setdefault("timeout", 5.0)
        return tenure.Client.from_env(holder=holder or self.holder(), **kwargs)

    def admin(self) -> tenure.Client:
        return self.client(token=ADMIN_TOKEN or None)

    @staticmethod
    def holder(name: str = "") -> str:
        return "py-%s%s" % (name + "-" if name else "", uuid.uuid4().hex[:8])

    def key(self, name: str) -> str:
        """A key of this test alone, under the token's write prefix "py/"."""
        return "py/%s/%s" % (name, uuid.uuid4().hex[:8])

    def track(self, lease: Optional[tenure.Lease]) -> Optional[tenure.Lease]:
        """Releases the lease when the test ends (best effort)."""
        if lease is not None:
            def release() -> None:
                try:
                    lease.release()
                except tenure.TenureError:
                    pass
            self.addCleanup(release)
        return lease
