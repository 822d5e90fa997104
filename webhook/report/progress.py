"""A one-line progress bar on stderr, drawn only when stderr is a terminal.

Listing a large cluster or building profiles from Prometheus takes seconds to minutes; a person at a
terminal wants to see it move. Anything else (CI logs, pipes, files) gets nothing: a log full of
carriage returns helps nobody.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """`step(label)` for work of unknown length, `advance(done, total, label)` for counted work."""

    def __init__(
        self, stream: TextIO | None = None, *, enabled: bool | None = None, interval: float = 0.1
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._interval = interval
        self._last = 0.0
        self._width = 0

    def _draw(self, text: str, *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < self._interval:
            return
        self._last = now
        line = text[:100]
        self.stream.write("\r" + line.ljust(self._width))
        self.stream.flush()
        self._width = len(line)

    def step(self, label: str) -> None:
        self._draw(f"pod-tailor: {label}", force=True)

    def advance(self, done: int, total: int, label: str) -> None:
        if total <= 0:
            return
        filled = int(30 * done / total)
        self._draw(f"[{'#' * filled}{'.' * (30 - filled)}] {done}/{total} {label}", force=done == total)

    def done(self) -> None:
        """Clear the line, so what follows starts clean."""
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
