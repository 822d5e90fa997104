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

from webhook import __version__
from webhook.admission import Answer, Engine, Outcome, VerdictCache, admit, default_engine, too_large
from webhook.config.settings import Settings
from webhook.refreshers.state import Refresher, State
from webhook.server.logs import RequestLog
from webhook.server.metrics import Metrics
from webhook.server.tls import CertificateReloader

__all__ = ["create_app"]

log = logging.getLogger("pod_tailor.admission")
_JSON = "application/json"


async def _read_limited(request: Request, limit: int) -> bytes | None:
    """The body, or None as soon as it is known to exceed `limit` (without reading the rest)."""
    declared = next((value for name, value in request.scope["headers"] if name == b"content-length"), None)
    if declared is not None and declared.isdigit():
        # The HTTP parser stops at the declared length, so a declared body is safe to read whole.
        return None if int(declared) > limit else await request.body()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


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


async def _run_refresher(refresher: Refresher, state: State) -> None:
    try:
        await refresher.run(state)
    except asyncio.CancelledError:
        raise
    except Exception:
        logging.getLogger("pod_tailor.refresh").exception(
            "refresher stopped", extra={"refresher": refresher.name}
        )


def create_app(
    settings: Settings,
    state: State,
    *,
    engine: Engine | None = None,
    tls: CertificateReloader | None = None,
    refreshers: Sequence[Refresher] = (),
) -> FastAPI:
    """The webhook app. `engine` defaults to the real one; `tls` is watched for rotation when given."""
    decide = engine or default_engine()
    metrics = Metrics(state)
    cache = VerdictCache(settings.verdict_cache_size, max_bytes=settings.verdict_cache_bytes)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        tasks: list[asyncio.Task[None]] = []
        for refresher in refreshers:
            state.pending.add(refresher.name)  # not ready until its first full load
            tasks.append(asyncio.create_task(_run_refresher(refresher, state), name=refresher.name))
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

    @app.post("/mutate")
    async def mutate(request: Request) -> Response:
        started = time.perf_counter()
        body = await _read_limited(request, settings.max_body_bytes)
        if body is None:
            answer = too_large(settings.max_body_bytes)
        else:
            answer = admit(body, cluster=state.cluster, profiles=state.profiles, engine=decide, cache=cache)
        seconds = time.perf_counter() - started
        try:
            metrics.record(answer, seconds)
            _log(answer, seconds)
        except Exception:  # bookkeeping must never change the answer
            log.exception("recording the answer failed", extra={"uid": answer.uid})
        headers = {"Connection": "close"} if answer.status == 413 else None
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
        }
        if tls is not None:
            details["certificate"] = {
                "notAfter": tls.current.not_after.isoformat(),
                "loadedAt": tls.current.loaded_at.isoformat(),
                "reloads": tls.reloads,
            }
        ready = not state.pending
        details["ready"] = ready
        return Response(orjson.dumps(details), status_code=200 if ready else 503, media_type=_JSON)

    @app.get("/metrics")
    async def prometheus() -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    app.state.metrics = metrics
    app.state.verdict_cache = cache
    return app
