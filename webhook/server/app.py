"""The FastAPI app: /mutate for the API server, /healthz, /readyz and /metrics for the kubelet and Prometheus.

The app is built from explicit Settings and State (no globals), so tests can run several at once.
Background work (snapshot refreshers, the certificate watcher) runs in the lifespan and is cancelled
on shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import orjson
from fastapi import FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.routing import Route

from webhook import __version__
from webhook.admission import Engine, VerdictCache, default_engine
from webhook.config.settings import Settings
from webhook.refreshers.health import supervise
from webhook.refreshers.state import Refresher, State
from webhook.server.guard_metrics import LimitCounts, ServerCollector
from webhook.server.metrics import Metrics
from webhook.server.mutate import MutateEndpoint
from webhook.server.overload import Gate
from webhook.server.protocol import ConnectionGuard
from webhook.server.tls import CertificateReloader

__all__ = ["create_app"]

_JSON = "application/json"


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
            endpoint.requests_log.flush()

    app = FastAPI(title="pod-tailor", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)

    endpoint = MutateEndpoint(settings, state, engine=decide, cache=cache, gate=gate, metrics=metrics,
                              counts=counts)
    app.router.routes.append(Route("/mutate", endpoint, methods=["POST"]))

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

    app.state.mutate = endpoint
    app.state.metrics = metrics
    app.state.verdict_cache = cache
    app.state.gate = gate
    return app
