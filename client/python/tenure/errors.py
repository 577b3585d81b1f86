"""Exceptions of the tenure client.

Every answer of the API that is not a success becomes an APIError (or one
of its subclasses, chosen by the error code of the answer), carrying the
code, message and field of the body, the lease_lost reason and, for held
and not_holder, the current lease. A request that got no answer at all
(refused connection, timeout) after the retries is an UnavailableError.
"""

from __future__ import annotations

from typing import Any, Dict, Optional


class TenureError(Exception):
    """Base class of every error this package raises."""


class InvalidError(TenureError, ValueError):
    """An argument was refused by the client before anything was sent."""


class DuplicateLeaseError(TenureError):
    """This client already keeps (or is acquiring) the lease of that holder
    on that key: the cluster would answer with the same lease and token, and
    two keep-alives would each end it on their own. Share the Lease you
    have, or acquire under another holder."""


class UnavailableError(TenureError):
    """No server answered, or none could serve, within the retries.

    The outcome of a write is unknown: every lease operation is idempotent,
    so it is safe to try again.
    """


class RenewFailedError(TenureError):
    """A lease kept alive with lose_on_renew_failure ended at its first
    failed renewal (a transient failure, or none succeeded within one
    renewal interval)."""


class APIError(TenureError):
    """An error answer of the HTTP API.

    status: the HTTP status; code: the API's error code ("held",
    "lease_lost", ...); message; field (the JSON field to blame, or "");
    reason (lease_lost only); lease (the current lease, a dict, for held
    and not_holder); retry_after (seconds, from the Retry-After header,
    0 when absent); index (the X-Tenure-Index header of the answer, 0
    when absent: a 404 of a read carries the index to block on).
    """

    def __init__(self, status: int, code: str, message: str, field: str = "",
                 reason: str = "", lease: Optional[Dict[str, Any]] = None,
                 retry_after: float = 0.0, body: Optional[Dict[str, Any]] = None):
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.reason = reason
        self.lease = lease
        self.retry_after = retry_after
        self.body = body or {}
        self.index = 0
        text = "%d %s: %s" % (status, code or "error", message)
        if field:
            text += " (field %s)" % field
        if reason:
            text += " (reason %s)" % reason
        super().__init__(text)

    @property
    def transient(self) -> bool:
        """True when the server could not act now (429, 5xx)."""
        return self.status == 429 or self.status >= 500


class HeldError(APIError):
    """409 held: another holder has the key; .lease is the current lease."""


class LeaseLostError(APIError):
    """404 lease_lost: the lease is no longer held; .reason says why."""


class CompactedError(APIError):
    """410 compacted: the events after the index asked for are no longer in
    the answering server's history; oldest_index says where it starts."""

    @property
    def oldest_index(self) -> int:
        try:
            return int(self.body.get("oldest_index") or 0)
        except (TypeError, ValueError):
            return 0


class NotFoundError(APIError):
    """404 not_found: the key (or group, server) was never seen."""


class NotHolderError(APIError):
    """409 not_holder: that holder and token never were the key's lease."""


class WrongSecretError(APIError):
    """409 wrong_secret: a renewal or a release named the key's held lease
    (holder and token) without its secret; nothing changed. Only the
    secret the lease was acquired under makes a caller its holder."""


class PermissionDeniedError(APIError):
    """403 permission_denied or acl_not_found: the ACL token may not do this."""


class DisabledError(APIError):
    """403 disabled: an operator disabled the key."""


class ProhibitedError(APIError):
    """403 prohibited: an operator prohibited this holder on the key."""


class OverloadedError(APIError):
    """429 overloaded or 503 too_many_connections, after the retries."""


class NoLeaderError(APIError):
    """503 no_leader or leadership_lost, after the retries."""


class BadRequestError(APIError, ValueError):
    """400: a field of the request was refused (invalid_key, invalid_ttl, ...)."""


class LeaseExpiredLocally(TenureError):
    """The lease's local deadline passed without a successful renewal.

    The holder stops treating itself as holder at the send time of its
    last successful acquire or renewal + TTL - margin, before the cluster
    may give the key to anyone else.
    """


class ReleasedError(TenureError):
    """The lease was released by its holder."""


class StaleTokenError(TenureError):
    """A fencing token below the highest seen for its key (or never granted)."""

    def __init__(self, key: str, token: int, latest: int, message: str = ""):
        self.key = key
        self.token = token
        self.latest = latest
        super().__init__(message or "stale fencing token %d for %r: token %d was granted since"
                         % (token, key, latest))


_BY_CODE = {
    "held": HeldError,
    "lease_lost": LeaseLostError,
    "not_found": NotFoundError,
    "compacted": CompactedError,
    "not_holder": NotHolderError,
    "wrong_secret": WrongSecretError,
    "permission_denied": PermissionDeniedError,
    "acl_not_found": PermissionDeniedError,
    "disabled": DisabledError,
    "prohibited": ProhibitedError,
    "overloaded": OverloadedError,
    "too_many_connections": OverloadedError,
    "no_leader": NoLeaderError,
    "leadership_lost": NoLeaderError,
}


def error_from_answer(status: int, body: Any, retry_after: float) -> APIError:
    """Builds the APIError of a non-2xx answer whose JSON body is body.

    A body that is not the API's error JSON becomes the message.
    """
    if isinstance(body, dict) and isinstance(body.get("error"), str) and body.get("error"):
        code = body["error"]
        cls = _BY_CODE.get(code)
        if cls is None:
            cls = BadRequestError if status == 400 else APIError
        return cls(status, code, str(body.get("message", "")), str(body.get("field", "") or ""),
                   str(body.get("reason", "") or ""), body.get("lease"), retry_after, body)
    text = body if isinstance(body, str) else ""
    text = text.strip()[:256] or "HTTP %d" % status
    return APIError(status, "", text, retry_after=retry_after)
