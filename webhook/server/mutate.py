"""POST /mutate as a plain ASGI app: read the body within limits, shed or decide, answer, record.

Plain ASGI rather than a FastAPI route: the endpoint takes no parameters to validate and answers
bytes the admission package already encoded, while a route's dependency solving, request and
response objects and the framework's middleware cost about as much CPU as answering a cached Pod.
The app mounts this endpoint as its `/mutate` route; the server also puts it in front of the app
(`fast_path`), so a review skips the middleware stack as well.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from webhook.admission import Answer, Engine, Outcome, VerdictCache, admit, shed, too_large
from webhook.admission.ledger import QuotaLedger
from webhook.config.settings import Settings
from webhook.refreshers.state import State
from webhook.server.deadline import BUDGET, request_timeout
from webhook.server.guard_metrics import LimitCounts
from webhook.server.logs import RequestLog
from webhook.server.metrics import Metrics
from webhook.server.overload import Gate, ShedReason
from webhook.server.protocol import ARRIVED

__all__ = ["ASGIApp", "MutateEndpoint", "fast_path"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("pod_tailor.admission")
_JSON = (b"content-type", b"application/json")
_CLOSE = (b"connection", b"close")
_SHED_HEAD = 64 * 1024  # bytes read at most, when shedding, to find the uid


class _DisconnectedError(Exception):
    """The client went away before its request was read."""


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None


async def _chunks(receive: Receive) -> Any:
    """The body's chunks as they arrive; `_DisconnectedError` when the client leaves first."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _DisconnectedError
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return


async def _read_limited(receive: Receive, limit: int) -> bytes | None:
    """The body, or None as soon as it is known to exceed `limit` (without reading the rest)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in _chunks(receive):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def _shed_early(receive: Receive, reason: str) -> tuple[Answer | None, bytes]:
    """A shed answer from as little of the body as gives the uid (the API server writes it first).

    Else (None, what was read: the whole body, or its first 64 KiB).
    """
    head = b""
    async for chunk in _chunks(receive):
        head += chunk
        answer = shed(head, reason, prefix_only=True)
        if answer is not None or len(head) > _SHED_HEAD:
            return answer, head
    return shed(head, reason), head


class MutateEndpoint:
    """The admission endpoint of one app: its settings, state, engine, cache, gate and metrics."""

    def __init__(
        self,
        settings: Settings,
        state: State,
        *,
        engine: Engine,
        cache: VerdictCache,
        gate: Gate,
        metrics: Metrics,
        counts: LimitCounts,
    ) -> None:
        self.settings, self.state, self.engine, self.cache = settings, state, engine, cache
        self.gate, self.metrics, self.counts = gate, metrics, counts
        self.requests_log = RequestLog()
        self.ledger = QuotaLedger()  # Pods admitted in the last seconds, by quota (quota status lags)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        try:
            answer = await self.answer_for(scope, receive)
        except _DisconnectedError:  # nobody to answer: counted, not logged as an error
            self.counts.disconnects += 1
            await send({"type": "http.response.start", "status": 400, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        seconds = time.perf_counter() - started
        try:
            self.metrics.record(answer, seconds)
            self.log(answer, seconds)
        except Exception:  # bookkeeping must never change the answer
            log.exception("recording the answer failed", extra={"uid": answer.uid})
        headers = [_JSON, (b"content-length", b"%d" % len(answer.body))]
        # While draining, each answer ends its connection, so none is cut with a request on its way.
        if answer.status == 413 or self.state.draining:
            headers.append(_CLOSE)
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        await send({"type": "http.response.body", "body": answer.body})

    async def answer_for(self, scope: Scope, receive: Receive) -> Answer:
        settings, gate, state, engine = self.settings, self.gate, self.state, self.engine
        limit = settings.max_body_bytes
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            return too_large(limit)
        timeout = request_timeout(scope["query_string"], default=settings.admission_timeout_seconds)
        arrived = scope.get("state", {}).get(ARRIVED) or time.monotonic()
        reason = gate.admit(declared or 0)
        try:
            if reason is not None:
                early, head = await _shed_early(receive, gate.count(reason))
                # Without a readable uid there is no allowing answer: the full path says what is
                # wrong (a cheap 400; a body cut at 64 KiB reads as "not JSON").
                return early or admit(head, cluster=state.cluster, profiles=state.profiles, engine=engine)
            body = await _read_limited(receive, limit)
        finally:
            if reason is None:
                gate.leave(declared or 0)
        if body is None:
            return too_large(limit)
        if time.monotonic() - arrived >= BUDGET * timeout:  # waited past its budget: nobody is waiting
            late = shed(body, gate.count(ShedReason.DEADLINE))
            if late is not None:
                return late
        return admit(
            body, cluster=state.cluster, profiles=state.profiles, engine=engine, cache=self.cache,
            ledger=self.ledger,
        )

    def log(self, answer: Answer, seconds: float) -> None:
        failed = answer.status >= 500 or answer.outcome is Outcome.ERROR
        fields: dict[str, Any] = {
            "uid": answer.uid,
            "namespace": answer.namespace,
            "workload": answer.workload,
            "outcome": answer.outcome,  # a StrEnum: logged as its value
            "policy": answer.policy,
            "injected": len(answer.injections) or None,
            "dry_run": answer.dry_run or None,
            "error": answer.error,
            "detail": answer.detail,
            "ms": round(seconds * 1000, 3),
        }
        self.requests_log.write(logging.WARNING if failed else logging.INFO, fields)


def fast_path(app: ASGIApp, endpoint: MutateEndpoint) -> ASGIApp:
    """`app`, with POST /mutate going straight to `endpoint` (the same one `app` routes it to)."""

    async def front(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/mutate" and scope["method"] == "POST":
            await endpoint(scope, receive, send)
        else:
            await app(scope, receive, send)

    return front
