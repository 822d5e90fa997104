"""Whether each background source is working, and a supervisor that keeps refreshers alive.

Why readiness does not follow a source's health: every replica reads the same sources, so a broken
store or API server would take every replica out of the Service at once, and `failurePolicy: Ignore`
would then admit every Pod untailored. A replica keeps serving its last good snapshot and says so:
`/readyz` lists each source (`up`, the error, failures, the last success) and the metrics
`pod_tailor_refresher_up` and `pod_tailor_refresher_failures_total` carry the same.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Health", "SourceHealth", "supervise"]

log = logging.getLogger("pod_tailor.refresh")


@dataclass
class SourceHealth:
    up: bool = True
    error: str | None = None
    failures: int = 0  # failed attempts since start
    restarts: int = 0  # times the refresher itself crashed and was started again
    last_success: float = 0.0  # epoch seconds; 0: never


class Health:
    """Health per source name; written by refreshers (from threads too: single assignments only)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._sources: dict[str, SourceHealth] = {}
        self._clock = clock

    def entry(self, name: str) -> SourceHealth:
        found = self._sources.get(name)
        if found is None:
            found = self._sources[name] = SourceHealth()
        return found

    def ok(self, name: str) -> None:
        entry = self.entry(name)
        entry.up, entry.error, entry.last_success = True, None, self._clock()

    def failed(self, name: str, message: str) -> None:
        entry = self.entry(name)
        entry.up, entry.error = False, message[:500]
        entry.failures += 1

    def items(self) -> Iterator[tuple[str, SourceHealth]]:
        return iter(sorted(self._sources.items()))

    @property
    def degraded(self) -> bool:
        return any(not entry.up for entry in self._sources.values())

    def report(self) -> dict[str, Any]:
        """The `/readyz` view."""
        return {
            name: {"up": entry.up, "error": entry.error, "failures": entry.failures,
                   "restarts": entry.restarts, "lastSuccess": entry.last_success or None}
            for name, entry in self.items()
        }


class _Runnable(Protocol):
    name: str

    async def run(self, state: Any) -> None: ...


async def supervise(refresher: _Runnable, state: Any, *, health: Health, initial: float = 1.0,
                    cap: float = 60.0) -> None:
    """Run `refresher` until cancelled, starting it again (with backoff) whenever it crashes or returns."""
    delay = initial
    while True:
        started = time.monotonic()
        try:
            await refresher.run(state)
            message = "refresher returned"
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a refresher must never stay dead: log, count, start it again
            message = f"refresher crashed: {type(exc).__name__}: {str(exc)[:200]}"
            log.exception("refresher crashed; starting it again", extra={"refresher": refresher.name})
        health.failed(refresher.name, message)
        health.entry(refresher.name).restarts += 1
        if time.monotonic() - started > cap:  # it ran well for a while: start again quickly
            delay = initial
        await asyncio.sleep(random.uniform(delay / 2, delay))
        delay = min(cap, delay * 2)
