"""A Python client of tenure, the lease coordinator (standard library only,
Python 3.9+).

    import tenure
    c = tenure.Client.from_env()              # TENURE_HTTP_ADDR, TENURE_HTTP_TOKEN, TENURE_CACERT, ...
    with c.acquire("scenes/01", ttl=10) as lease:
        while lease.valid():
            store.write("scenes/01", lease.token, work())

See docs/jobs.md of the repository, section "From Python".
"""

import logging

from .client import (ENV_CACERT, ENV_CLIENT_CERT, ENV_CLIENT_KEY, ENV_HTTP_ADDR,
                     ENV_HTTP_TOKEN, Answer, Client, Router, new_holder_id,
                     new_lease_secret, normalize_address)
from .durations import format_duration, parse_duration
from .election import Election, election_key, leader_info
from .errors import (APIError, BadRequestError, CompactedError, DisabledError, DuplicateLeaseError, HeldError,
                     InvalidError, LeaseExpiredLocally, LeaseLostError,
                     NoLeaderError, NotFoundError, NotHolderError,
                     OverloadedError, PermissionDeniedError, ProhibitedError,
                     ReleasedError, RenewFailedError, StaleTokenError, TenureError,
                     UnavailableError, WrongSecretError)
from .fence import MAX_FENCE_CACHE_AGE, FenceValidator
from .lease import Lease, default_margin, local_deadline, renew_interval
from .worker import PRESENCE_PREFIX, Worker

logging.getLogger("tenure").addHandler(logging.NullHandler())

__all__ = [
    "APIError", "Answer", "BadRequestError", "Client", "CompactedError", "DisabledError", "DuplicateLeaseError", "ENV_CACERT",
    "ENV_CLIENT_CERT", "ENV_CLIENT_KEY", "ENV_HTTP_ADDR", "ENV_HTTP_TOKEN", "Election",
    "FenceValidator", "HeldError", "InvalidError", "Lease", "LeaseExpiredLocally",
    "LeaseLostError", "NoLeaderError", "NotFoundError", "NotHolderError", "OverloadedError",
    "PRESENCE_PREFIX", "PermissionDeniedError", "ProhibitedError", "ReleasedError", "RenewFailedError", "Router", "StaleTokenError",
    "MAX_FENCE_CACHE_AGE", "TenureError", "UnavailableError", "Worker", "WrongSecretError", "default_margin",
    "election_key", "format_duration", "leader_info",
    "local_deadline", "new_holder_id", "new_lease_secret", "normalize_address", "parse_duration", "renew_interval",
]
