"""A reverse proxy in front of a real Prometheus that fails chosen queries, as a busy or limited backend does.

`rule(query) -> (status, body) | None` decides per query: None forwards it to Prometheus, anything else
is answered instead (a 503 from an overloaded query frontend, a 422 from a per-query limit, ...).
`listing(path)` decides the same for the calls without a query (the series and label values listings).
`delay` holds every answer that long (a slow server). What it answered is kept for the tests.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import httpx

Rule = Callable[[str], tuple[int, bytes] | None]


def prometheus_error(kind: str, message: str) -> bytes:
    return f'{{"status":"error","errorType":"{kind}","error":"{message}"}}'.encode()


def _peak(answer: bytes) -> int:
    try:
        stats = json.loads(answer)["data"]["stats"]["samples"]
    except (ValueError, KeyError, TypeError):
        return 0
    return int(stats.get("peakSamples", 0))


class FaultProxy:
    def __init__(self, upstream: str, rule: Rule, *, delay: float = 0.0, listing: Rule | None = None) -> None:
        self.upstream, self.rule, self.delay, self.listing = upstream.rstrip("/"), rule, delay, listing
        self.answered: list[tuple[int, str, int]] = []  # (status, query, Prometheus' peakSamples) per query
        self._lock = threading.Lock()
        self.in_flight = self.most_in_flight = 0  # queries being answered at once (now, at most)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                query_string = self.path.partition("?")[2]
                form = parse_qs(body.decode() or query_string)
                query = (form.get("query") or [""])[0]
                with proxy._lock:
                    proxy.in_flight += 1
                    proxy.most_in_flight = max(proxy.most_in_flight, proxy.in_flight)
                try:
                    status, answer = self._answer(query, body)
                finally:
                    with proxy._lock:
                        proxy.in_flight -= 1
                with proxy._lock:
                    proxy.answered.append((status, query, _peak(answer)))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def _answer(self, query: str, body: bytes) -> tuple[int, bytes]:
                time.sleep(proxy.delay)
                listing = proxy.listing or (lambda _: None)
                refused = proxy.rule(query) if query else listing(self.path.partition("?")[0])
                if refused is None:
                    kind = {"Content-Type": self.headers.get("Content-Type", "")}
                    upstream = httpx.request(self.command, proxy.upstream + self.path, content=body,
                                             headers=kind, timeout=60.0)
                    return upstream.status_code, upstream.content
                return refused

            do_GET = do_POST = _forward  # noqa: N815 (http.server names)

            def log_message(self, *args: object) -> None:
                return None

        return Handler

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
