"""Kubernetes timestamps (RFC 3339 in UTC, whole seconds) to and from Unix seconds.

The kubelet's `startTime` and condition transitions, and the times pod-tailor writes into its own
records on a Pod (`pod-tailor.io/boost`, `pod-tailor.io/resized`), are read and written here.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["stamp", "unstamp"]


def stamp(seconds: float) -> str:
    """`2025-01-31T12:00:00Z` for Unix seconds (the fraction dropped)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def unstamp(text: object) -> float | None:
    """Unix seconds of an RFC 3339 timestamp; None for anything that is not one."""
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
