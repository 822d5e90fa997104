"""The FastAPI app: /mutate for the API server, /healthz, /readyz and /metrics for the kubelet and Prometheus.

The app is built from explicit Settings and State (no globals), so tests can run several at once.
Background work (snapshot refreshers, the certificate watcher) runs in the lifespan and is cancelled
on shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import orjson
from fastapi import FastAPI, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.requests import ClientDisconnect

from webhook import __version__
from webhook.admission import Answer, Engine, Outcome, VerdictCache, admit, default_engine, shed, too_large
from webhook.config.settings import Settings
from webhook.refreshers.health import supervise
from webhook.refreshers.state import Refresher, State
from webhook.server.deadline import BUDGET, request_timeout
from webhook.server.guard_metrics import LimitCounts, ServerCollector
from webhook.server.logs import RequestLog
from webhook.server.metrics import Metrics
from webhook.server.overload import Gate, ShedReason
from webhook.server.protocol import ARRIVED, ConnectionGuard
from webhook.server.tls import CertificateReloader

__all__ = ["create_app"]

log = logging.getLogger("pod_tailor.admission")
_JSON = "application/json"


def _declared_length(request: Request) -> int | None:
    declared = next((value for name, value in request.scope["headers"] if name == b"content-length"), None)
    return int(declared) if declared is not None and declared.isdigit() else None


async def _read_limited(request: Request, limit: int) -> bytes | None:
    """The body, or None as soon as it is known to exceed `limit` (without reading the rest)."""
    declared = _declared_length(request)
    if declared is not None:
        # The HTTP parser stops at the declared length, so a declared body is safe to read whole.
        return None if declared > limit else await request.body()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def _shed_early(request: Request, reason: str) -> tuple[Answer | None, bytes]:
    """A shed answer from as little of the body as gives the uid (the API server writes it first).

    Else (None, what was read: the whole body, or its first 64 KiB).
    """
    head = b""
    async for chunk in request.stream():
        head += chunk
        answer = shed(head, reason, prefix_only=True)
        if answer is not None or len(head) > 64 * 1024:
            return answer, head
    return shed(head, reason), head


_requests_log = RequestLog()


def _log(answer: Answer, seconds: float) -> None:
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
    _requests_log.write(logging.WARNING if failed else logging.INFO, fields)


def create_app(
    settings: Settings,
    state: State,
    *,
    engine: Engine | None = None,
    tls: CertificateReloader | None = None,
    refreshers: Sequence[Refresher] = (),
    guard: ConnectionGuard | None = None,
) -> FastAPI:
    """The webhook app. `engine` defaults to the real one; `tls` is watched for rotation when given.

    `guard`: the connection limits of the server it runs in, for the metrics.
    """
    decide = engine or default_engine()
    cache = VerdictCache(settings.verdict_cache_size, max_bytes=settings.verdict_cache_bytes)
    metrics = Metrics(state)
    gate = Gate(settings.max_in_flight, settings.max_in_flight_bytes)
    counts = LimitCounts()
    metrics.registry.register(
        ServerCollector(gate=gate, cache=cache, health=state.health, counts=counts, guard=guard)
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        tasks: list[asyncio.Task[None]] = []
        for refresher in refreshers:
            state.pending.add(refresher.name)  # not ready until its first full load
            tasks.append(asyncio.create_task(supervise(refresher, state, health=state.health),
                                             name=refresher.name))
        if tls is not None:
            tasks.append(asyncio.create_task(tls.watch(settings.cert_reload_seconds), name="certificates"))
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            _requests_log.flush()

    app = FastAPI(title="pod-tailor", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)

    async def answer_for(request: Request) -> Answer | None:
        """The answer, or None when the client went away before its request was read."""
        limit = settings.max_body_bytes
        declared = _declared_length(request)
        if declared is not None and declared > limit:
            return too_large(limit)
        timeout = request_timeout(request.scope["query_string"], default=settings.admission_timeout_seconds)
        arrived = request.scope.get("state", {}).get(ARRIVED) or time.monotonic()
        reason = gate.admit(declared or 0)
        try:
            if reason is not None:
                early, head = await _shed_early(request, gate.count(reason))
                # Without a readable uid there is no allowing answer: the full path says what is
                # wrong (a cheap 400; a body cut at 64 KiB reads as "not JSON").
                return early or admit(head, cluster=state.cluster, profiles=state.profiles, engine=decide)
            body = await _read_limited(request, limit)
        except ClientDisconnect:
            counts.disconnects += 1
            return None
        finally:
            if reason is None:
                gate.leave(declared or 0)
        if body is None:
            return too_large(limit)
        if time.monotonic() - arrived >= BUDGET * timeout:  # waited past its budget: nobody is waiting
            late = shed(body, gate.count(ShedReason.DEADLINE))
            if late is not None:
                return late
        return admit(body, cluster=state.cluster, profiles=state.profiles, engine=decide, cache=cache)

    @app.post("/mutate")
    async def mutate(request: Request) -> Response:
        started = time.perf_counter()
        answer = await answer_for(request)
        if answer is None:  # nobody to answer: counted, not logged as an error
            return Response(status_code=400)
        seconds = time.perf_counter() - started
        try:
            metrics.record(answer, seconds)
            _log(answer, seconds)
        except Exception:  # bookkeeping must never change the answer
            log.exception("recording the answer failed", extra={"uid": answer.uid})
        # While draining, each answer ends its connection, so none is cut with a request on its way.
        headers = {"Connection": "close"} if answer.status == 413 or state.draining else None
        return Response(answer.body, status_code=answer.status, media_type=_JSON, headers=headers)

    @app.get("/healthz")
    async def healthz() -> Response:
        return Response(b'{"status":"ok"}', media_type=_JSON)

    @app.get("/readyz")
    async def readyz() -> Response:
        details: dict[str, Any] = {
            "policies": sorted(state.cluster.policies.policies),
            "pending": sorted(state.pending),
            "notes": state.notes,
            "snapshots": {"cluster": state.cluster.source, "profiles": state.profiles.source},
            # A broken source leaves readiness alone (every replica shares it) but is said here.
            "sources": state.health.report(),
            "degraded": state.health.degraded,
            "draining": state.draining,
        }
        if tls is not None:
            details["certificate"] = {
                "notAfter": tls.current.not_after.isoformat(),
                "loadedAt": tls.current.loaded_at.isoformat(),
                "reloads": tls.reloads,
            }
        ready = not state.pending and not state.draining
        details["ready"] = ready
        return Response(orjson.dumps(details), status_code=200 if ready else 503, media_type=_JSON)

    @app.get("/metrics")
    async def prometheus() -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    app.state.metrics = metrics
    app.state.verdict_cache = cache
    app.state.gate = gate
    return app
