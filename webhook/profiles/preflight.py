"""One cheap look before a build: does this connection see container data, and does the selector pick some?

A mistyped `--prometheus-selector`, a wrong tenant header or a path prefix to the wrong server all
answer every query with an empty result, and an empty build would replace good profiles with none.
The label-values API reads only the index, so asking it which namespaces have container memory
series in the window costs next to nothing; when the answer is empty, a second look at the
selector's own labels says what they hold instead.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Sequence

import httpx
import orjson

from webhook.profiles.connection import Matcher, PrometheusConnection
from webhook.profiles.prometheus import PrometheusError
from webhook.profiles.queries import MEMORY_METRIC

__all__ = ["check_connection"]

_SHOWN = 8  # label values named in a message


def _label_values(
    client: httpx.Client, connection: PrometheusConnection, label: str, *, match: str, start: float,
    end: float,
) -> list[str]:
    where = f"{connection.url}/api/v1/label/{label}/values"
    params = {"match[]": match, "start": f"{start:.3f}", "end": f"{end:.3f}"}
    try:
        response = client.get(where, params=params)
    except httpx.TimeoutException:
        raise PrometheusError(
            f"Prometheus at {connection.display_url}: no answer within {connection.timeout:g}s"
        ) from None
    except httpx.HTTPError as exc:
        raise PrometheusError(f"cannot reach Prometheus at {connection.display_url}: {exc}") from None
    try:
        body = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        body = None
    answered = isinstance(body, dict) and body.get("status") == "success"
    if not answered or not isinstance(body, dict) or not isinstance(body.get("data"), list):
        detail = body.get("error") if isinstance(body, dict) else response.text[:200]
        raise PrometheusError(
            f"Prometheus at {connection.display_url}: HTTP {response.status_code} for the label values of "
            f"{label}: {detail!r}"
        )
    return sorted(str(value) for value in body["data"])


def _listed(values: Sequence[str]) -> str:
    more = f" and {len(values) - _SHOWN} more" if len(values) > _SHOWN else ""
    return ", ".join(values[:_SHOWN]) + more


def check_connection(
    connection: PrometheusConnection, *, window: float, end: float | None = None,
    namespaces: Sequence[str] = (),
) -> list[str]:
    """Raise `PrometheusError` naming the setting when the build would read nothing; return warnings.

    Credentials, TLS and the path prefix are exercised by the same request, so a wrong one fails
    here, before any large query, with the message `PrometheusConnection` gives it. So does a
    `namespaces` entry with no container data (a typo would build nothing, and say so only as "0
    workloads" after replacing what the store and the checkpoint held).
    """
    end = time.time() if end is None else end
    start = end - window
    selector = connection.selector_text
    scope = f"{MEMORY_METRIC}{{{selector}}}"
    with connection.client() as client:
        with_data = _label_values(client, connection, "namespace", match=scope, start=start, end=end)
        if not with_data:
            raise PrometheusError(_nothing_found(client, connection, start=start, end=end))
        missing = [name for name in namespaces if name not in with_data]
        if missing:
            raise PrometheusError(_no_such_namespace(missing, with_data, connection, start=start, end=end))
        if any(m.label == "cluster" for m in connection.selector):
            return []
        clusters = _label_values(client, connection, "cluster", match=scope, start=start, end=end)
    if len(clusters) > 1:
        return [
            f"Prometheus at {connection.display_url} holds container data of {len(clusters)} clusters "
            f"(cluster: {_listed(clusters)}) and no --prometheus-selector picks one: their Pods are pooled"
        ]
    return []


def _no_such_namespace(
    missing: Sequence[str], with_data: Sequence[str], connection: PrometheusConnection, *, start: float,
    end: float,
) -> str:
    guesses = [close for name in missing for close in difflib.get_close_matches(name, with_data, n=1)]
    hint = f"did you mean {', '.join(guesses)}? " if guesses else ""
    return (
        f"--namespace {', '.join(missing)}: no {MEMORY_METRIC} series {_span(start, end)} at "
        f"{connection.display_url}: {hint}namespaces with data: {_listed(with_data)}"
    )


def _span(start: float, end: float) -> str:
    hours = round((end - start) / 3600)
    length = f"{hours // 24}d" if hours % 24 == 0 else f"{hours}h"
    return f"in the last {length}" if abs(time.time() - end) < 60 else "in the window"


def _nothing_found(
    client: httpx.Client, connection: PrometheusConnection, *, start: float, end: float
) -> str:
    span = _span(start, end)
    if not connection.selector:
        return (
            f"Prometheus at {connection.display_url} has no {MEMORY_METRIC} series {span}: is cadvisor "
            "scraped into this server, is --prometheus-url (and its path prefix) right, and for a "
            "multi-tenant server (Mimir, Cortex), the tenant in --prometheus-header 'X-Scope-OrgID: ...'?"
        )
    details = [_label_report(client, connection, m, start=start, end=end) for m in connection.selector]
    return (
        f"--prometheus-selector '{connection.selector_text}' matches no {MEMORY_METRIC} series {span} at "
        f"{connection.display_url}: " + "; ".join(details)
    )


def _label_report(
    client: httpx.Client, connection: PrometheusConnection, matcher: Matcher, *, start: float, end: float
) -> str:
    values = _label_values(client, connection, matcher.label, match=MEMORY_METRIC, start=start, end=end)
    if not values:
        return f"no series has a label {matcher.label!r}"
    matching = [value for value in values if matcher.matches(value)]
    if matching:
        return f"{matcher} alone matches {_listed(matching)}"
    return f"{matcher} matches none of the values of {matcher.label!r}: {_listed(values)}"
