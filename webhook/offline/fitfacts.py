"""Nodes, DaemonSets and ResourceQuotas in the files handed to the preview and the report: node fit and
quota offline.

A platform team previews a chart against the cluster it targets by adding that cluster's Nodes
(`kubectl get nodes -o yaml`) and the namespace's ResourceQuotas to the input; the preview then caps
and falls back exactly as the server does (`webhook.core.fit.nodes`, `webhook.core.fit.quota`). Nodes given
in files are added to those the snapshot knows (from `--cluster`, or none); quotas land in the
namespace the Pods would (`-n`, else their own, else `default`), a file's quota replacing the
cluster's of the same name. A `List` (what `kubectl get -o yaml` writes) is read item by item by
the caller. The offline path has no ledger: each Pod is decided against `status.used` as given.
DaemonSets in the input (a manifest set often ships some) are subtracted from the nodes as the server
subtracts the cluster's (`webhook.core.fit.daemonsets`), a file's replacing the cluster's of the same name;
a DaemonSet's own Pods get their share back, as on the server.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from webhook.core.fit.daemonsets import index_with_daemonsets, members, parse_daemonset
from webhook.core.fit.placement import DaemonSetShare, NodeShape, parse_node
from webhook.core.model.resourcequota import Quota, parse_quota
from webhook.core.snapshot import ClusterSnapshot

__all__ = ["KINDS", "with_manifest_nodes_and_quotas"]

KINDS = ("Node", "ResourceQuota", "DaemonSet")


def with_manifest_nodes_and_quotas(
    cluster: ClusterSnapshot, documents: Iterable[Mapping[str, Any]], *, namespace: str | None
) -> ClusterSnapshot:
    """`cluster` with the Nodes, DaemonSets and ResourceQuotas found in `documents` added; unchanged
    without any."""
    nodes: list[NodeShape | str] = []
    daemonsets: dict[str, DaemonSetShare] = {}
    quotas: dict[str, dict[str, Quota]] = {}
    for document in documents:
        kind = document.get("kind")
        if kind == "Node":
            nodes.append(parse_node(document))
        elif kind == "DaemonSet":
            document = _in_namespace(document, namespace)
            share = parse_daemonset(document)
            if isinstance(share, DaemonSetShare):
                daemonsets[share.key] = share
        elif kind == "ResourceQuota":
            found = parse_quota(document)
            where = namespace or str((document.get("metadata") or {}).get("namespace") or "default")
            quotas.setdefault(where, {})[found.name] = found
    if not nodes and not quotas and not (daemonsets and cluster.nodes is not None):
        return cluster
    changes: dict[str, Any] = {}
    if nodes or (daemonsets and cluster.nodes is not None):
        known = members(cluster.nodes) if cluster.nodes else []
        named = {shape.name for shape in nodes if isinstance(shape, NodeShape)}
        kept: list[NodeShape | str] = [shape for shape in known if shape.name not in named]
        shares = None
        if daemonsets or (cluster.nodes is not None and cluster.nodes.daemonsets is not None):
            shares = [*((cluster.nodes.daemonsets or {}) if cluster.nodes else {}).values()]
            shares = [share for share in shares if share.key not in daemonsets] + list(daemonsets.values())
        changes["nodes"] = index_with_daemonsets([*kept, *nodes], shares)
    if quotas:
        merged = dict(cluster.quotas)
        for where, by_name in quotas.items():
            mine = {quota.name: quota for quota in merged.get(where, ())} | by_name
            merged[where] = tuple(mine[name] for name in sorted(mine))
        changes["quotas"] = merged
    return dataclasses.replace(cluster, **changes)


def _in_namespace(document: Mapping[str, Any], namespace: str | None) -> Mapping[str, Any]:
    """The DaemonSet where its Pods would run: `-n`, else its own namespace."""
    if not namespace:
        return document
    return {**document, "metadata": {**(document.get("metadata") or {}), "namespace": namespace}}
