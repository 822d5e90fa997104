"""HTTP/1.1 connections with the timeouts uvicorn lacks: slow clients cannot hold the server.

uvicorn times out idle keep-alive connections but not a request that is slow to arrive: 1,000
connections sending their headers a byte at a time were held forever. This protocol (uvicorn's own
httptools protocol, extended) closes a connection whose request headers are not complete within
`header_timeout` (counted from the connection, or from the request's first byte on a kept-alive
one), or whose body is not complete within `body_timeout` of its headers. Past `max_connections`
open connections the oldest one still waiting for its headers is closed to make room (a slow one,
never a request being answered), else the new one. It also stamps each request's arrival time into
the ASGI scope, so the app can tell how long a request waited before its turn (`overload`).
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


@dataclass
class ConnectionGuard:
    """Limits and counts shared by every connection of one server (the event loop's thread only)."""

    header_timeout: float = 5.0
    body_timeout: float = 10.0
    max_connections: int = 1000
    open: int = 0
    cut: Counter[str] = field(default_factory=Counter)  # header_timeout, body_timeout, evicted, refused
    waiting: dict[Any, None] = field(default_factory=dict)  # connections awaiting headers, oldest first


class _GuardedProtocol(HttpToolsProtocol):
    guard: ConnectionGuard

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timer: asyncio.TimerHandle | None = None

    # -- connection -----------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        guard = self.guard
        guard.open += 1
        if guard.open > guard.max_connections:
            oldest = next(iter(guard.waiting), None)
            if oldest is None:
                guard.cut["refused"] += 1
                transport.abort()
                return
            guard.cut["evicted"] += 1
            oldest.transport.abort()
        self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.guard.waiting.pop(self, None)
        self.guard.open -= 1
        super().connection_lost(exc)

    # -- one request --------------------------------------------------------------------------
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.scope["state"][ARRIVED] = time.monotonic()
        if self not in self.guard.waiting:  # a kept-alive connection's next request
            self._await_headers()

    def on_headers_complete(self) -> None:
        self.guard.waiting.pop(self, None)
        self._arm(self.guard.body_timeout, "body_timeout")
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
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

    # -- timers -------------------------------------------------------------------------------
    def _await_headers(self) -> None:
        self.guard.waiting[self] = None
        self._arm(self.guard.header_timeout, "header_timeout")

    def _arm(self, seconds: float, reason: str) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, self._expire, reason)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self, reason: str) -> None:
        self._timer = None
        if not self.transport.is_closing():
            self.guard.cut[reason] += 1
            # abort, not close: a TLS close waits for the peer's close_notify (up to 30 s), and the
            # request's task learns of the disconnect only when the connection is finally lost.
            self.transport.abort()


def guarded_protocol(guard: ConnectionGuard) -> type[asyncio.Protocol]:
    """The protocol class for uvicorn's `Config(http=...)`, bound to `guard`."""
    return type("GuardedProtocol", (_GuardedProtocol,), {"guard": guard})
