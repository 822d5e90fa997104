"""One complete list of a collection, page by page, as raw dicts: for commands that read the cluster once.

The watches (`watch.py`) list the same way before they watch; a report or a dashboard refresh only
needs the list. Errors are the client's `ApiException` (with the HTTP status), for the caller to
turn into a message naming what could not be read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["list_all", "one_line_error"]

Obj = dict[str, Any]


def list_all(call: Callable[..., Any], *, page_size: int = 500, **options: Any) -> list[Obj]:
    """Every item of a bound list method (`functools.partial(core.list_namespaced_pod, "shop")`)."""
    items: list[Obj] = []
    token: str | None = None
    while True:
        page: dict[str, Any] = {"limit": page_size, "_preload_content": False, "_request_timeout": (10, 60)}
        if token:
            page["_continue"] = token
        body = json.loads(call(**options, **page).data)
        items.extend(item for item in body.get("items") or () if isinstance(item, dict))
        token = (body.get("metadata") or {}).get("continue")
        if not token:
            return items


def one_line_error(exc: BaseException) -> str:
    """`403 Forbidden: deployments.apps is forbidden: ...` from an ApiException; the first line otherwise."""
    status = getattr(exc, "status", None)
    if status:
        message = ""
        try:
            message = str(json.loads(getattr(exc, "body", "") or "{}").get("message", ""))
        except (ValueError, AttributeError):
            message = ""
        reason = getattr(exc, "reason", "") or ""
        return f"{status} {reason}" + (f": {message}" if message else "")
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
