"""The storage side of fencing: accept a write only if its token is at
least the highest seen for its key.

Tokens of successive holders of a key strictly increase, so a store that
refuses a token below the highest it has seen for the key is safe against
a holder that was paused past its lease and wakes up to write. The check
must be atomic with the write it guards: FenceValidator.accept records the
token under a lock, so a store serialises its writes through it (or keeps
the highest token in the same transaction as the data, as the SQL
example of docs/jobs.md does).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Dict, Optional, Tuple

from .errors import APIError, InvalidError, StaleTokenError, UnavailableError

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

MAX_FENCE_CACHE_AGE = 3600.0
"""The longest cache_when_unreachable a FenceValidator accepts (seconds)."""


class FenceValidator:
    """Keeps the highest fencing token seen per key.

    check(key, token) raises StaleTokenError when token is below the highest
    seen for key, and otherwise records it as the highest. Without a client
    that is all (the store's own check). With a client, a token above the
    highest seen, or equal to it but last confirmed more than refresh_after
    seconds ago, is also confirmed with a linearizable read of the key: a
    token below the key's latest grant is stale (another holder has the
    key), and one above it was never granted. Safe for concurrent use.

    cache_when_unreachable (seconds, off by default, at most
    MAX_FENCE_CACHE_AGE): while the cluster cannot be reached
    (UnavailableError, or a 429 or 5xx answer), a token equal to the
    highest seen for its key, confirmed by the cluster less than that long
    ago, is accepted from the cache; a lower one is refused as always, and
    anything else raises the error, deciding nothing. The risk, taken on
    purpose: another holder may have been granted the key meanwhile, and
    its superseded predecessor's writes are accepted until the cached entry
    is that old. Only the store's own token check keeps them out.
    """

    def __init__(self, client: Optional["Client"] = None, refresh_after: float = 1.0,
                 cache_when_unreachable: float = 0.0):
        if not 0 <= cache_when_unreachable <= MAX_FENCE_CACHE_AGE:
            raise InvalidError("cache_when_unreachable must be from 0 (off) to %g seconds, got %r"
                               % (MAX_FENCE_CACHE_AGE, cache_when_unreachable))
        self.client = client
        self.refresh_after = refresh_after
        self.cache_when_unreachable = cache_when_unreachable
        self._mu = threading.Lock()
        self._seen: Dict[str, Tuple[int, float]] = {}  # key -> (highest token, confirmed at)

    def highest(self, key: str) -> int:
        """The highest token seen for key (0: none)."""
        with self._mu:
            return self._seen.get(key, (0, 0.0))[0]

    def check(self, key: str, token: int) -> None:
        """Raises StaleTokenError unless token may write to key now; see
        the class. Records token as the highest seen."""
        if not isinstance(token, int) or token <= 0:
            raise InvalidError("fencing token must be a positive integer, got %r" % (token,))
        with self._mu:
            highest, confirmed = self._seen.get(key, (0, 0.0))
            if token < highest:
                raise StaleTokenError(key, token, highest)
            fresh = token == highest and time.monotonic() - confirmed < self.refresh_after
            if self.client is None or fresh:
                self._seen[key] = (token, confirmed if token == highest else time.monotonic())
                return
        sent = time.monotonic()
        try:
            cur = self.client.get_lease(key)
        except (UnavailableError, APIError) as e:
            if isinstance(e, APIError) and not e.transient:
                raise
            with self._mu:
                highest, confirmed = self._seen.get(key, (0, 0.0))
            if (self.cache_when_unreachable > 0 and token == highest
                    and time.monotonic() - confirmed < self.cache_when_unreachable):
                return  # the cluster cannot be reached: the cached verdict, as the caller chose
            raise
        latest = int(cur.get("token", 0)) if cur else 0
        with self._mu:
            highest, confirmed = self._seen.get(key, (0, 0.0))
            if latest > highest:
                highest, confirmed = latest, sent
            elif latest == highest:
                confirmed = sent
            self._seen[key] = (highest, confirmed)
            if token < highest:
                raise StaleTokenError(key, token, highest)
            if token > latest:
                raise StaleTokenError(key, token, latest, "fencing token %d was never granted for %r "
                                      "(its latest is %d)" % (token, key, latest))

    def accept(self, key: str, token: int) -> bool:
        """check without the exception: True when the write may go ahead."""
        try:
            self.check(key, token)
        except StaleTokenError:
            return False
        return True
