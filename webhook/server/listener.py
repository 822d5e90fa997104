"""uvicorn's server with what a webhook needs around it: a TLS handshake timeout and a graceful drain.

- TLS handshake timeout: uvicorn leaves asyncio's default of 60 s, so a client that connects and
  never says hello holds a connection for a minute; here it is `tls_handshake_timeout`.
- Drain on SIGTERM: readiness goes false at once (`state.draining`: /readyz answers 503, so the
  endpoint is removed), while the server goes on answering for `drain_seconds`, every answer with
  `Connection: close`, so each kept-alive connection of the API server ends after an answered
  request instead of being cut while a request may be on its way. Then uvicorn's own shutdown stops
  listening, closes idle connections and waits for requests in flight. A second signal stops at once.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
import time
from types import FrameType

import uvicorn
from uvicorn.config import STARTUP_FAILURE

from webhook.refreshers.state import State

__all__ = ["WebhookServer"]

log = logging.getLogger("pod_tailor.server")


class WebhookServer(uvicorn.Server):
    def __init__(
        self, config: uvicorn.Config, *, state: State, drain_seconds: float, handshake_timeout: float
    ) -> None:
        super().__init__(config)
        self.state = state
        self.drain_seconds = drain_seconds
        self.handshake_timeout = handshake_timeout
        self.drain_until: float | None = None

    # -- drain ------------------------------------------------------------------------------------
    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.drain_until is None and not self.should_exit and self.drain_seconds > 0:
            self._captured_signals.append(sig)  # re-raised at the end, so the exit status tells the truth
            self.drain()
            return
        super().handle_exit(sig, frame)

    def drain(self) -> None:
        """Stop being ready now; stop serving after `drain_seconds` (checked every tick, 0.1 s)."""
        self.state.draining = True
        self.drain_until = time.monotonic() + self.drain_seconds
        log.info("draining: not ready, answering with Connection: close for %.1fs", self.drain_seconds)

    async def on_tick(self, counter: int) -> bool:
        if self.drain_until is not None and time.monotonic() >= self.drain_until:
            self.should_exit = True
        return await super().on_tick(counter)

    # -- listening --------------------------------------------------------------------------------
    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's start-up for a host and port, with the TLS handshake timeout passed on."""
        config = self.config
        if sockets is not None or config.fd is not None or config.uds is not None:
            await super().startup(sockets=sockets)
            return
        await self.lifespan.startup()
        if self.lifespan.should_exit:
            sys.exit(STARTUP_FAILURE)

        def create_protocol(_loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Protocol:
            protocol: asyncio.Protocol = config.http_protocol_class(  # type: ignore[call-arg]
                config=config, server_state=self.server_state, app_state=self.lifespan.state, _loop=_loop
            )
            return protocol

        loop = asyncio.get_running_loop()
        try:
            server = await loop.create_server(
                create_protocol, host=config.host, port=config.port, ssl=config.ssl, backlog=config.backlog,
                ssl_handshake_timeout=self.handshake_timeout if config.ssl else None,
            )
        except OSError as exc:
            log.error("cannot listen on %s:%s: %s", config.host, config.port, exc)
            await self.lifespan.shutdown()
            sys.exit(STARTUP_FAILURE)
        self.servers = [server]
        assert server.sockets is not None
        self._log_started_message(list(server.sockets))
        self.started = True

