"""Fencing at Redis: a Lua script compares the writer's fencing token with
the highest recorded under a fence key, raises it, and runs one Redis
command, in one step (standard library only; give it your redis-py client,
or anything with its eval(script, numkeys, *keys_and_args)).

The script is the Go client's (fence.lua, beside this module). The
command's keys come first, then its other arguments: SET key value, HSET
key field value, SADD key member, INCRBY key n, RPUSH key value ... On
Redis Cluster give the fence key and the command's keys one hash tag
("{session:42}:fence", "{session:42}"). If the command itself fails, the
raised token stays raised (Redis does not undo a script's writes); it was
the writer's own.
"""

from __future__ import annotations

import importlib.resources
from typing import Any, Sequence

from .errors import InvalidError, StaleTokenError

SCRIPT = importlib.resources.files("tenure").joinpath("fence.lua").read_text(encoding="utf-8")
"""The Lua script RedisFence.do runs with EVAL."""


class RedisFence:
    """Fenced writes through redis_client.eval. Holds no state of its own."""

    def __init__(self, redis_client: Any):
        self.redis = redis_client

    def do(self, fence_key: str, token: int, keys: Sequence[str], command: str, *args: Any) -> Any:
        """Runs command on keys with args if token is at least the highest
        recorded under fence_key, records it as the highest, and returns the
        command's reply. Raises StaleTokenError, writing nothing, when a
        higher token is recorded. Any other error (Redis unreachable, the
        command failed) says nothing of the fence: treat the write as not
        done."""
        if not fence_key:
            raise InvalidError("fence_key must not be empty")
        if not isinstance(token, int) or token < 1:
            raise InvalidError("token %r must be a lease's token, 1 or more" % (token,))
        if not command:
            raise InvalidError("command must not be empty")
        reply = self.redis.eval(SCRIPT, 1 + len(keys), fence_key, *keys, str(token), command, *args)
        if not isinstance(reply, (list, tuple)) or not reply:
            raise RuntimeError("redisfence: unexpected reply %r" % (reply,))
        if reply[0] == 1:
            return reply[1] if len(reply) > 1 else None
        if reply[0] == 0:
            highest = reply[1] if len(reply) > 1 else b"0"
            if isinstance(highest, bytes):
                highest = highest.decode()
            raise StaleTokenError(fence_key, token, int(highest), "stale fencing token %d under %r: "
                                  "token %s has written since" % (token, fence_key, highest))
        raise RuntimeError("redisfence: unexpected reply %r" % (reply,))

    def advance(self, fence_key: str, token: int) -> None:
        """Records token as the highest under fence_key unless a higher one
        is recorded (StaleTokenError then); writes nothing else. A
        read-modify-write calls it before its read."""
        self.do(fence_key, token, [], "PING")
