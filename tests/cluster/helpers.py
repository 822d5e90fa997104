"""Shared helpers for the cluster tests."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(condition: Callable[[], object], *, timeout: float = 10.0, what: str = "condition") -> None:
    """Poll until `condition()` is truthy: the watches run in threads, so results arrive asynchronously."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)
