"""The logs of the long-running verbs beside `serve` (`recommend`, `dashboard`, `rightsize`, `reports`):
JSON lines on stderr, as `serve` writes them (`webhook.server.logs.JsonFormatter`), at --log-level.

The handler joins the root logger's (a test's capture keeps its own) and writes to whatever stderr is
when a record comes, so a verb run twice in one process logs once, to the stream of the moment.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from webhook.commands.failures import quiet_http_clients
from webhook.server.logs import JsonFormatter

__all__ = ["json_logs"]


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """A stream handler on the current `sys.stderr`."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _: Any) -> None:
        return None


def json_logs(level: str) -> None:
    root = logging.getLogger()
    root.handlers[:] = [handler for handler in root.handlers if not isinstance(handler, _Stderr)]
    handler = _Stderr()
    handler.setFormatter(JsonFormatter())
    root.addHandler(handler)
    for name in ("pod_tailor", "webhook", "uvicorn"):
        logging.getLogger(name).setLevel(level.upper())
    logging.getLogger("uvicorn.access").disabled = True  # the dashboard's pages are not worth a line each
    quiet_http_clients()
