"""Go duration strings, as the API writes them ("10s", "500ms", "1m30s")."""

from __future__ import annotations

import re

_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "\u00b5s": 1e-6,  # micro sign
    "\u03bcs": 1e-6,  # Greek mu
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}

_PART = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")


def format_duration(seconds: float) -> str:
    """Seconds as a Go duration string with millisecond precision ("2500ms").

    Whole seconds are written as seconds ("10s"). Negative values are refused.
    """
    if seconds < 0:
        raise ValueError("duration must not be negative, got %r" % (seconds,))
    ms = int(round(seconds * 1000))
    if ms % 1000 == 0:
        return "%ds" % (ms // 1000)
    return "%dms" % ms


def parse_duration(text: str) -> float:
    """A Go duration string ("1m30.5s", "-2ms", "0s") as seconds."""
    s = text.strip()
    if not s:
        raise ValueError("empty duration")
    sign = 1.0
    if s[0] in "+-":
        if s[0] == "-":
            sign = -1.0
        s = s[1:]
    if s == "0":
        return 0.0
    total = 0.0
    pos = 0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            raise ValueError("invalid duration %r" % (text,))
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return sign * total
