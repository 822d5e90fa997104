"""A small reverse proxy that demands headers, as the gateways in front of a shared Prometheus do.

It stands in for kube-rbac-proxy or an OAuth gateway (a bearer token) and for the tenant routing of
Mimir, Cortex or Thanos receive (`X-Scope-OrgID`), optionally under a path prefix (Mimir serves the
Prometheus API under `/prometheus`). A request with every required header (exact value) is forwarded
to the upstream; otherwise it gets the answer those servers give: 401 with `no org id` when the tenant
is missing, 401 `Unauthorized` for a missing or wrong token. The headers it saw are kept for tests.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

TENANT = "X-Scope-OrgID"


class HeaderProxy:
    def __init__(self, upstream: str, *, required: Mapping[str, str], prefix: str = "") -> None:
        self.upstream, self.prefix = upstream.rstrip("/"), prefix.rstrip("/")
        self.required = dict(required)  # may be changed while running (a rotated token)
        self.seen: list[dict[str, str]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}{self.prefix}"

    def _refusal(self, headers: Mapping[str, str]) -> bytes | None:
        received = {name.lower(): value for name, value in headers.items()}  # names are case-insensitive
        for name, value in self.required.items():
            got = received.get(name.lower())
            if got != value:
                return b"no org id\n" if name.lower() == TENANT.lower() and got is None else b"Unauthorized\n"
        return None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                headers = dict(self.headers.items())
                proxy.seen.append(headers)
                refusal = proxy._refusal(headers)
                if refusal is not None or not self.path.startswith(proxy.prefix + "/"):
                    self._answer(401 if refusal else 404, refusal or b"404 page not found\n", "text/plain")
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                kept = {k: v for k, v in headers.items() if k.lower() in ("content-type", "accept")}
                upstream = httpx.request(
                    self.command, proxy.upstream + self.path[len(proxy.prefix):], content=body,
                    headers=kept, timeout=60.0,
                )
                self._answer(upstream.status_code, upstream.content, upstream.headers.get("content-type", ""))

            def _answer(self, status: int, body: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _forward  # noqa: N815 (the names http.server dispatches to)

            def log_message(self, format: str, *args: object) -> None:
                return None

        return Handler

    def __enter__(self) -> HeaderProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
