"""Turning the watched objects into one immutable `ClusterSnapshot` (pure: no I/O).

Each rebuild starts from every watched object, so a snapshot is always complete; what makes that
cheap is `ParseCache`: parsing an object (quantities, selectors) is most of a rebuild's cost, and
one event changes one object, so parsed forms are kept by resourceVersion across rebuilds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from webhook.config.settings import Settings
from webhook.core.fit.daemonsets import index_with_daemonsets, parse_daemonset
from webhook.core.fit.placement import DaemonSetShare, NodeIndex, parse_node
from webhook.core.model.autoscalers import (
    Hpa,
    Ignored,
    NamespaceAutoscalers,
    Vpa,
    index_autoscalers,
    parse_hpa,
    parse_vpa,
)
from webhook.core.model.inputs import BASE_LABEL_KEYS
from webhook.core.model.limitrange import LimitRangeItem, limit_range_items
from webhook.core.model.resourcequota import Quota, parse_quota
from webhook.core.model.routes import (
    NamespaceTraffic,
    Route,
    Service,
    index_traffic,
    parse_ingress,
    parse_ingress_class,
    parse_route,
    parse_service,
)
from webhook.core.policy.policies import PolicySet
from webhook.core.snapshot import ClusterSnapshot

__all__ = ["Objects", "ParseCache", "build_snapshot", "node_index", "quotas_by_namespace", "traffic_index"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Objects = Mapping[str, Sequence[Obj]]  # resource (plural) -> its current objects
_T = TypeVar("_T")
_Key = tuple[str, str, str, str]  # resource, namespace, name, resourceVersion


class ParseCache:
    """Parsed forms of watched objects by (resource, namespace, name, resourceVersion).

    `sweep()` after a rebuild drops what that rebuild did not ask for (deleted or changed objects).
    """

    def __init__(self) -> None:
        self._entries: dict[_Key, Any] = {}
        self._used: set[_Key] = set()
        self.node_index: tuple[Any, NodeIndex] | None = None  # by the nodes' and DaemonSets' versions

    def get(self, resource: str, obj: Obj, parse: Callable[[Obj], _T]) -> _T:
        meta = obj.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name"))
        key = (resource, namespace, name, str(meta.get("resourceVersion", "")))
        self._used.add(key)
        try:
            found: _T = self._entries[key]
        except KeyError:
            found = self._entries[key] = parse(obj)
        return found

    def sweep(self) -> None:
        for stale in self._entries.keys() - self._used:
            del self._entries[stale]
        self._used = set()

    def __len__(self) -> int:
        return len(self._entries)


def _namespace_labels(namespaces: Sequence[Obj]) -> dict[str, dict[str, str]]:
    return {
        str(ns["metadata"]["name"]): dict(ns["metadata"].get("labels") or {})
        for ns in namespaces
        if (ns.get("metadata") or {}).get("name")
    }


def _limit_ranges(objects: Sequence[Obj], cache: ParseCache) -> dict[str, tuple[LimitRangeItem, ...]]:
    """Several LimitRanges of one namespace add up, in name order."""
    ranges: dict[str, tuple[LimitRangeItem, ...]] = {}
    for limit_range in sorted(objects, key=lambda lr: str(lr["metadata"].get("name"))):
        namespace = str(limit_range["metadata"].get("namespace") or "")
        items = cache.get("limitranges", limit_range, limit_range_items)
        ranges[namespace] = ranges.get(namespace, ()) + items
    return ranges


def _usable(parsed: tuple[Hpa | Vpa | Ignored, tuple[str, ...]], obj: Obj) -> Hpa | Vpa | None:
    """The autoscaler, or None; what was left out is logged once per object version (parses are cached)."""
    scaler, left_out = parsed
    namespace = (obj.get("metadata") or {}).get("namespace")
    for reason in left_out:
        log.debug("autoscalers: namespace %s: %s; that metric is ignored", namespace, reason)
    if isinstance(scaler, Ignored):
        log.debug("autoscalers: namespace %s: %s; ignored", namespace, scaler.reason)
        return None
    return scaler


def _hpa(obj: Obj) -> Hpa | Vpa | None:
    return _usable(parse_hpa(obj), obj)


def _vpa(obj: Obj) -> Hpa | Vpa | None:
    return _usable(parse_vpa(obj), obj)


def _autoscalers(objects: Objects, cache: ParseCache) -> dict[str, NamespaceAutoscalers]:
    """HPAs and VPAs by namespace and target; what cannot be used is left out (see `_usable`)."""
    found: list[tuple[str, Hpa | Vpa]] = []
    for resource, parse in (("horizontalpodautoscalers", _hpa), ("verticalpodautoscalers", _vpa)):
        for obj in objects.get(resource, ()):
            scaler = cache.get(resource, obj, parse)
            if scaler is not None:
                found.append((str(obj["metadata"].get("namespace") or ""), scaler))
    return index_autoscalers(found)


def _service(obj: Obj) -> Service | None:
    service, left_out = parse_service(obj)
    namespace = (obj.get("metadata") or {}).get("namespace")
    for reason in left_out:
        log.debug("traffic: namespace %s: %s; left out", namespace, reason)
    return service


def _namespace_of(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def traffic_index(objects: Objects, cache: ParseCache) -> dict[str, NamespaceTraffic] | None:
    """Services and the routes to them by namespace; None when Services are not watched at all."""
    if "services" not in objects:
        return None
    services = [(_namespace_of(obj), found) for obj in objects["services"]
                if (found := cache.get("services", obj, _service)) is not None]
    classes: dict[str, str] = {}
    default_class = ""
    for obj in objects.get("ingressclasses", ()):
        parsed = cache.get("ingressclasses", obj, parse_ingress_class)
        if parsed is not None:
            name, controller, is_default = parsed
            classes[name] = controller
            default_class = name if is_default and not default_class else default_class
    routes: list[tuple[str, Route]] = []
    for obj in objects.get("ingresses", ()):
        # Parsed anew each rebuild: the result depends on the IngressClasses too (cheap: no quantities).
        ingress = parse_ingress(obj, classes, default_class=default_class)
        if ingress is not None:
            routes.append((_namespace_of(obj), ingress))
    for resource in ("httproutes", "grpcroutes"):
        for obj in objects.get(resource, ()):
            route = cache.get(resource, obj, lambda o: parse_route(o, namespace=_namespace_of(o)))
            if route is not None:
                routes.append((_namespace_of(obj), route))
    return index_traffic(services, routes)


def _versions(objects: Sequence[Obj]) -> tuple[tuple[str, str, str], ...]:
    return tuple(sorted(
        (str(meta.get("namespace") or ""), str(meta.get("name")), str(meta.get("resourceVersion", "")))
        for meta in ((obj.get("metadata") or {}) for obj in objects)
    ))


def _logged_daemonset(obj: Obj) -> DaemonSetShare | None:
    share = parse_daemonset(obj)
    if isinstance(share, str):
        log.info("daemonsets: %s; not subtracted from node fit", share)
        return None
    return share


def node_index(
    objects: Sequence[Obj], cache: ParseCache, daemonsets: Sequence[Obj] | None = None
) -> NodeIndex:
    """Every node's shape, less what the DaemonSets landing on it take (None: DaemonSets not known),
    grouped (`webhook.core.fit.placement`, `webhook.core.fit.daemonsets`); rebuilt only when one of them
    changed."""
    versions = (_versions(objects), None if daemonsets is None else _versions(daemonsets))
    shapes = [cache.get("nodes", obj, parse_node) for obj in objects]
    shares = None if daemonsets is None else [
        share for obj in daemonsets if (share := cache.get("daemonsets", obj, _logged_daemonset)) is not None
    ]
    if cache.node_index is not None and cache.node_index[0] == versions:
        return cache.node_index[1]
    index = index_with_daemonsets(shapes, shares)
    for reason in index.left_out:
        log.info("nodes: %s; left out of node fit", reason)
    cache.node_index = (versions, index)
    return index


def quotas_by_namespace(objects: Sequence[Obj], cache: ParseCache) -> dict[str, tuple[Quota, ...]]:
    """Each namespace's ResourceQuotas, in name order; what each leaves out is logged once per version."""
    found: dict[str, list[Quota]] = {}
    for obj in sorted(objects, key=lambda q: str((q.get("metadata") or {}).get("name"))):
        quota = cache.get("resourcequotas", obj, parse_quota)
        found.setdefault(_namespace_of(obj), []).append(quota)
    return {namespace: tuple(quotas) for namespace, quotas in found.items()}


def _logged_quota(obj: Obj) -> Quota:
    quota = parse_quota(obj)
    where = f"{_namespace_of(obj)}/{quota.name}"
    if quota.ignored:
        log.info("resourcequotas: %s: %s; left out", where, quota.ignored)
    if quota.left_out:
        ignored = ", ".join(quota.left_out)
        log.debug("resourcequotas: %s: %s not changed by pod-tailor; ignored", where, ignored)
    return quota


def build_snapshot(
    *,
    policies: PolicySet,
    settings: Settings,
    objects: Objects,
    server_version: tuple[int, int] | None,
    taken_at: float,
    source: str,
    cache: ParseCache | None = None,
) -> ClusterSnapshot:
    """One complete snapshot from every watched collection (`objects`, by resource plural)."""
    parsed = ParseCache() if cache is None else cache
    traffic = traffic_index(objects, parsed)
    snapshot = ClusterSnapshot(
        policies=policies,
        default_mode=settings.default_mode,
        namespaces=_namespace_labels(objects.get("namespaces", ())),
        limit_ranges=_limit_ranges(objects.get("limitranges", ()), parsed),
        server_version=server_version,
        taken_at=taken_at,
        source=source,
        autoscalers=_autoscalers(objects, parsed),
        traffic=traffic,
        label_keys={
            namespace: BASE_LABEL_KEYS | found.label_keys
            for namespace, found in (traffic or {}).items()
            if found.label_keys
        },
        nodes=node_index(objects["nodes"], parsed, objects.get("daemonsets")) if "nodes" in objects else None,
        quotas=quotas_by_namespace(objects.get("resourcequotas", ()), parsed),
    )
    parsed.sweep()
    return snapshot
