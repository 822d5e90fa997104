"""HTTP/1.1 connections with the timeouts uvicorn lacks: slow clients cannot hold the server.

uvicorn times out idle keep-alive connections but not a request that is slow to arrive: 1,000
connections sending their headers a byte at a time were held forever. This protocol (uvicorn's own
httptools protocol, extended) closes a connection whose request headers are not complete within
`header_timeout` (counted from the connection, or from the request's first byte on a kept-alive
one), or whose body is not complete within `body_timeout` of its headers. Past `max_connections`
open connections the oldest one still waiting for its headers is closed to make room (a slow one,
never a request being answered), else the new one. It also stamps each request's arrival time into
the ASGI scope, so the app can tell how long a request waited before its turn (`overload`).

Why a sweep once a second rather than a timer per request: two timers armed and cancelled for every
request cost more than the rest of this class; the sweep costs one pass over the connections that
are mid-request, and a slow client is cut at most a second after its timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["ARRIVED", "ConnectionGuard", "guarded_protocol"]

ARRIVED = "pod_tailor_arrived"  # scope["state"][ARRIVED]: time.monotonic() at the request's first byte
SWEEP_SECONDS = 1.0


@dataclass
class ConnectionGuard:
    """Limits and counts shared by every connection of one server (the event loop's thread only)."""

    header_timeout: float = 5.0
    body_timeout: float = 10.0
    max_connections: int = 1000
    open: int = 0
    cut: Counter[str] = field(default_factory=Counter)  # header_timeout, body_timeout, evicted, refused
    # Connections awaiting their request's headers (oldest first) or its body, by deadline.
    waiting: dict[Any, float] = field(default_factory=dict)
    reading: dict[Any, float] = field(default_factory=dict)
    _sweeping: bool = False

    def watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the sweep on `loop` (once)."""
        if not self._sweeping:
            self._sweeping = True
            loop.call_later(SWEEP_SECONDS, self._sweep, loop)

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        now = time.monotonic()
        for phase, reason in ((self.waiting, "header_timeout"), (self.reading, "body_timeout")):
            late = [connection for connection, deadline in phase.items() if deadline <= now]
            for connection in late:
                phase.pop(connection, None)
                connection.cut_off(reason)
        loop.call_later(SWEEP_SECONDS, self._sweep, loop)


class _GuardedProtocol(HttpToolsProtocol):
    guard: ConnectionGuard

    # -- connection -----------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        guard = self.guard
        guard.watch(self.loop)
        guard.open += 1
        if guard.open > guard.max_connections:
            oldest = next(iter(guard.waiting), None)
            if oldest is None:
                guard.cut["refused"] += 1
                transport.abort()
                return
            guard.waiting.pop(oldest)
            oldest.cut_off("evicted")
        guard.waiting[self] = time.monotonic() + guard.header_timeout

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.waiting.pop(self, None)
        self.guard.reading.pop(self, None)
        self.guard.open -= 1
        super().connection_lost(exc)

    def cut_off(self, reason: str) -> None:
        """Abort the connection: a TLS close would wait for the peer's close_notify (up to 30 s), and
        the request's task learns of the disconnect only when the connection is finally lost."""
        if not self.transport.is_closing():
            self.guard.cut[reason] += 1
            self.transport.abort()

    # -- one request --------------------------------------------------------------------------
    def on_message_begin(self) -> None:
        super().on_message_begin()
        now = time.monotonic()
        self.scope["state"][ARRIVED] = now
        waiting = self.guard.waiting
        if self not in waiting:  # a kept-alive connection's next request
            waiting[self] = now + self.guard.header_timeout

    def on_headers_complete(self) -> None:
        guard = self.guard
        guard.waiting.pop(self, None)
        guard.reading[self] = time.monotonic() + guard.body_timeout
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self.guard.reading.pop(self, None)
        super().on_message_complete()

    def shutdown(self) -> None:
        """At server shutdown: a connection with no request yet is left to its request, not cut.

        uvicorn closes it at once, but a client that has just connected is sending a request that
        would then be lost; its answer says `Connection: close` (the app is draining), and the header
        timeout still ends it if nothing comes.
        """
        if self.cycle is None and self in self.guard.waiting:
            return
        super().shutdown()


def guarded_protocol(guard: ConnectionGuard) -> type[asyncio.Protocol]:
    """The protocol class for uvicorn's `Config(http=...)`, bound to `guard`."""
    return type("GuardedProtocol", (_GuardedProtocol,), {"guard": guard})
