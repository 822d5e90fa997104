"""The recommender's loop: build the profile store every interval, on one replica of several.

With leader election only the replica holding the Lease builds. A replica that loses it mid-build
does not write: the store it was given refuses writes once `leading` is cleared (`LeaderOnlyStore`).
The Lease's renew deadline (10 s) is shorter than its duration (15 s), so the old leader stops
writing before a new one can start. A new leader does not rebuild at once: the next build is due
`interval` after the store's own build time, so a fail-over costs no extra load on Prometheus.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from webhook.profiles.build import BuildResult
from webhook.profiles.store import ProfileDocument, ProfileStore, StoreError

__all__ = ["BuildLoop", "LeaderOnlyStore"]

log = logging.getLogger("pod_tailor.recommender")


class LeaderOnlyStore:
    """A `ProfileStore` whose writes go through only while `leading` is set."""

    def __init__(self, store: ProfileStore, leading: threading.Event) -> None:
        self.store, self.leading = store, leading

    def read(self) -> ProfileDocument:
        return self.store.read()

    def fingerprint(self) -> object:
        return self.store.fingerprint()

    def describe(self) -> str:
        return self.store.describe()

    def write(self, document: ProfileDocument, *, scope: Iterable[str] | None = None) -> None:
        if not self.leading.is_set():
            raise StoreError("this replica no longer holds the Lease: the build is not written")
        self.store.write(document, scope=scope)


@dataclass
class BuildLoop:
    """Runs `build` every `interval` seconds while `leading` is set, until `stop` is set.

    `build` raises on failure (the caller's error types: `failures`); `on_success`/`on_failure`
    record each outcome. A failed build is tried again after `retry` seconds (at most `interval`).
    `last_built` reads when the store was last built (0: never): a build is never due before an
    interval after it, whichever replica built it.
    """

    build: Callable[[], BuildResult]
    interval: float
    leading: threading.Event
    stop: threading.Event
    last_built: Callable[[], float]
    on_success: Callable[[BuildResult], None]
    on_failure: Callable[[float, Exception], None]
    failures: tuple[type[Exception], ...] = (StoreError,)
    retry: float = 300.0
    max_builds: int = 0  # 0: forever
    clock: Callable[[], float] = time.time
    _next: float = field(default=0.0, init=False)  # this replica's own next try

    def run(self) -> int:
        builds = 0
        while not self.stop.is_set():
            if not self.leading.wait(1.0):
                continue
            wait = self._due() - self.clock()
            if wait > 0:
                self.stop.wait(min(wait, 30.0))  # then look again: leadership may have moved
                continue
            started = time.monotonic()
            try:
                self.on_success(self.build())
                self._next = self.clock() + self.interval
            except self.failures as exc:
                self.on_failure(time.monotonic() - started, exc)
                self._next = self.clock() + min(self.retry, self.interval)
            builds += 1
            if builds == self.max_builds:
                return 0
        return 0

    def _due(self) -> float:
        try:
            stored = self.last_built()
        except Exception as exc:  # an unreadable store: build now rather than never
            log.warning("cannot read when the store was built (%s); building now", exc)
            stored = 0.0
        return max(self._next, stored + self.interval if stored else 0.0)
