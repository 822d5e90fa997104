"""`pod-tailor dashboard`: a read-only web UI over the fleet report, with the same data as JSON under /api.

Pages and JSON are made from the current `Fleet` only (no request waits on the cluster). Every
answer forbids scripts, frames and outside resources (Content-Security-Policy): the pages need none,
and the JSON never carries a container's environment or arguments, only what the report shows.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
from fastapi import FastAPI, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse

from webhook import __version__
from webhook.dashboard import pages
from webhook.dashboard.fleet import Fleet, FleetKeeper
from webhook.report.document import report_document, stamp, totals_document

__all__ = ["create_dashboard"]

_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "frame-ancestors 'none'; "
    "form-action 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _namespaces(fleet: Fleet) -> dict[str, Any]:
    report = fleet.report
    return {
        "generatedAt": stamp(report.generated_at),
        "source": report.source,
        "profiles": {"source": report.profiles, "builtAt": stamp(report.profiles_at)},
        "problems": list(report.problems),
        "cluster": totals_document(report.cluster),
        "namespaces": [
            {
                "name": ns,
                "mode": report.modes.get(ns, ""),
                "policy": report.policies.get(ns, ""),
                "profiles": ns in fleet.profiled,
                "totals": totals_document(totals),
            }
            for ns, totals in report.namespaces.items()
        ],
    }


def _namespace(fleet: Fleet, namespace: str) -> bytes:
    """The namespace's document; its workloads come encoded already (see `Fleet.workload_json`)."""
    report, seen = fleet.report, fleet.dry_run
    totals = report.namespaces.get(namespace)
    head = {
        "name": namespace,
        "mode": report.modes.get(namespace, ""),
        "policy": report.policies.get(namespace, ""),
        "profiles": namespace in fleet.profiled,
        "totals": totals_document(totals) if totals else None,
        "dryRun": {
            "window": seen.window,
            "pods": seen.pods.get(namespace, 0),
            "values": dict(seen.values.get(namespace, {})),
            "error": seen.error,
        },
        "workloads": [],
    }
    return _with_workloads(head, [fleet.workload_json(w) for w in fleet.by_namespace.get(namespace, ())])


def _with_workloads(head: dict[str, Any], pieces: list[bytes]) -> bytes:
    """`head` (whose last key is an empty "workloads") with the encoded workloads spliced in."""
    return orjson.dumps(head)[: -len(b"[]}")] + b"[" + b",".join(pieces) + b"]}"


def _json(body: bytes) -> Response:
    return Response(body, media_type="application/json")


def create_dashboard(keeper: FleetKeeper, *, background: bool = True) -> FastAPI:
    """The app over `keeper`; with `background` the lifespan runs its refresh thread."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if background:
            keeper.start()
        try:
            yield
        finally:
            if background:
                keeper.stop()

    app = FastAPI(
        title="pod-tailor dashboard",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )

    @app.middleware("http")
    async def headers(request: Request, call_next: Any) -> Response:
        response: Response = await call_next(request)
        response.headers.update(_HEADERS)
        return response

    def html(text: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(text, status_code=status)

    def missing(what: str, *, api: bool) -> Response:
        if api:
            return JSONResponse({"detail": what}, status_code=404)
        return html(pages.not_found(what), 404)

    def unready(api: bool) -> Response:
        if api:
            return JSONResponse({"detail": "loading", "error": keeper.error}, status_code=503)
        return html(pages.loading(keeper.error, retry_seconds=keeper.retry_seconds), 503)

    @app.get("/healthz")
    async def healthz() -> Response:
        return JSONResponse({"status": "ok"})

    @app.get("/readyz")
    async def readyz() -> Response:
        ready = keeper.current is not None
        body = {"ready": ready, "error": keeper.error}
        return JSONResponse(body, status_code=200 if ready else 503)

    @app.get("/")
    async def namespaces() -> Response:
        fleet = keeper.current
        return html(pages.namespaces_page(fleet, error=keeper.error)) if fleet else unready(False)

    @app.get("/namespaces/{namespace}")
    async def namespace(namespace: str, sort: str = "name", order: str = "asc") -> Response:
        fleet = keeper.current
        if fleet is None:
            return unready(False)
        if namespace not in fleet.report.namespaces and namespace not in fleet.report.modes:
            return missing(f"namespace {namespace} is not in the report", api=False)
        return html(pages.namespace_page(fleet, namespace, sort=sort, order=order, error=keeper.error))

    @app.get("/namespaces/{namespace}/{kind}/{name}")
    async def workload(namespace: str, kind: str, name: str, source: str = "") -> Response:
        fleet = keeper.current
        if fleet is None:
            return unready(False)
        found = fleet.find(namespace, kind, name, source)
        if found is None:
            return missing(f"{kind}/{name} in namespace {namespace} is not in the report", api=False)
        return html(pages.workload_page(fleet, found))

    @app.get("/api/report")
    async def api_report() -> Response:
        fleet = keeper.current
        if fleet is None:
            return unready(True)
        head = report_document(fleet.report, workloads=False)
        return _json(_with_workloads(head, [fleet.workload_json(w) for w in fleet.report.workloads]))

    @app.get("/api/namespaces")
    async def api_namespaces() -> Response:
        fleet = keeper.current
        return _json(orjson.dumps(_namespaces(fleet))) if fleet else unready(True)

    @app.get("/api/namespaces/{namespace}")
    async def api_namespace(namespace: str) -> Response:
        fleet = keeper.current
        if fleet is None:
            return unready(True)
        if namespace not in fleet.report.namespaces and namespace not in fleet.report.modes:
            return missing(f"namespace {namespace} is not in the report", api=True)
        return _json(_namespace(fleet, namespace))

    @app.get("/api/namespaces/{namespace}/{kind}/{name}")
    async def api_workload(namespace: str, kind: str, name: str, source: str = "") -> Response:
        fleet = keeper.current
        if fleet is None:
            return unready(True)
        found = fleet.find(namespace, kind, name, source)
        if found is None:
            return missing(f"{kind}/{name} in namespace {namespace} is not in the report", api=True)
        return _json(fleet.workload_json(found))

    return app
