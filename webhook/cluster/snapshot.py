"""Turning the watched objects into one immutable `ClusterSnapshot` (pure: no I/O)."""

from __future__ import annotations

from typing import Any

from webhook.config.settings import Settings
from webhook.core.facts import LimitRangeItem, limit_range_items
from webhook.core.policy import PolicySet
from webhook.core.snapshot import ClusterSnapshot

__all__ = ["build_snapshot"]


def build_snapshot(
    *,
    policies: PolicySet,
    settings: Settings,
    namespaces: list[dict[str, Any]],
    limit_ranges: list[dict[str, Any]],
    server_version: tuple[int, int] | None,
    taken_at: float,
    source: str,
    parsed: dict[tuple[str, str, str], tuple[LimitRangeItem, ...]] | None = None,
) -> ClusterSnapshot:
    """One complete snapshot from the watched objects (several LimitRanges per namespace add up).

    `parsed` caches parsed LimitRanges by (namespace, name, resourceVersion) across rebuilds: parsing
    quantities is most of a rebuild's cost, and an event changes one object. Stale entries are dropped.
    """
    labels = {
        str(ns["metadata"]["name"]): dict(ns["metadata"].get("labels") or {})
        for ns in namespaces
        if (ns.get("metadata") or {}).get("name")
    }
    cache = {} if parsed is None else parsed
    seen: set[tuple[str, str, str]] = set()
    ranges: dict[str, tuple[LimitRangeItem, ...]] = {}
    for limit_range in sorted(limit_ranges, key=lambda lr: str(lr["metadata"].get("name"))):
        meta = limit_range["metadata"]
        namespace = str(meta.get("namespace") or "")
        key = (namespace, str(meta.get("name")), str(meta.get("resourceVersion", "")))
        seen.add(key)
        items = cache.get(key)
        if items is None:
            items = cache[key] = limit_range_items(limit_range)
        ranges[namespace] = ranges.get(namespace, ()) + items
    for stale in cache.keys() - seen:
        del cache[stale]
    return ClusterSnapshot(
        policies=policies,
        default_mode=settings.default_mode,
        namespaces=labels,
        limit_ranges=ranges,
        server_version=server_version,
        taken_at=taken_at,
        source=source,
    )
