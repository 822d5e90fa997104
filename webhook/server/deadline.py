"""The time a /mutate request may take: the API server's `?timeout=`, else the registered timeout.

The API server adds `?timeout=Ns` (a Go duration: `10s`, `2.5s`, `1m0s`, `500ms`) with the time it
actually has left, and gives up after it; an answer after that is work for a caller who is gone.
Work must end a little before it, so the answer can still travel back: `BUDGET` of the timeout.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs

__all__ = ["BUDGET", "request_timeout"]

BUDGET = 0.8  # share of the timeout for deciding; the rest is for the answer's way back
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|us|µs|ns|m|s)")
_MAX = 30.0  # the API server allows at most 30 s for a webhook


def _duration(text: str) -> float | None:
    """Seconds in a Go duration string, or None when it is not one."""
    position, total = 0, 0.0
    for found in _PART.finditer(text):
        if found.start() != position:
            return None
        total += float(found[1]) * _UNITS[found[2]]
        position = found.end()
    return total if position == len(text) and text else None


_seen: dict[bytes, float | None] = {}  # the API server sends a handful of values: parsed once each


def request_timeout(query: bytes, *, default: float) -> float:
    """The timeout in seconds: the `timeout` query parameter when readable and positive, else `default`."""
    if b"timeout=" not in query:
        return default
    if query in _seen:
        seconds = _seen[query]
    else:
        values = parse_qs(query.decode("latin-1")).get("timeout")
        seconds = _duration(values[0]) if values else None
        if len(query) <= 64:  # bounded: short keys, at most 1024 of them
            if len(_seen) >= 1024:
                _seen.clear()
            _seen[query] = seconds
    if seconds is None or seconds <= 0:
        return default
    return min(seconds, _MAX)
