"""Nodes and ResourceQuotas in the files handed to the preview and the report: node fit and quota offline.

A platform team previews a chart against the cluster it targets by adding that cluster's Nodes
(`kubectl get nodes -o yaml`) and the namespace's ResourceQuotas to the input; the preview then caps
and falls back exactly as the server does (`webhook.core.fit`, `webhook.core.quotafit`). Nodes given
in files are added to those the snapshot knows (from `--cluster`, or none); quotas land in the
namespace the Pods would (`-n`, else their own, else `default`), a file's quota replacing the
cluster's of the same name. A `List` (what `kubectl get -o yaml` writes) is read item by item by
the caller. The offline path has no ledger: each Pod is decided against `status.used` as given.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from webhook.core.nodefit import NodeShape, index_nodes, parse_node
from webhook.core.quota import Quota, parse_quota
from webhook.core.snapshot import ClusterSnapshot

__all__ = ["KINDS", "with_manifest_nodes_and_quotas"]

KINDS = ("Node", "ResourceQuota")


def with_manifest_nodes_and_quotas(
    cluster: ClusterSnapshot, documents: Iterable[Mapping[str, Any]], *, namespace: str | None
) -> ClusterSnapshot:
    """`cluster` with the Nodes and ResourceQuotas found in `documents` added; unchanged without any."""
    nodes: list[NodeShape | str] = []
    quotas: dict[str, dict[str, Quota]] = {}
    for document in documents:
        kind = document.get("kind")
        if kind == "Node":
            nodes.append(parse_node(document))
        elif kind == "ResourceQuota":
            found = parse_quota(document)
            where = namespace or str((document.get("metadata") or {}).get("namespace") or "default")
            quotas.setdefault(where, {})[found.name] = found
    if not nodes and not quotas:
        return cluster
    changes: dict[str, Any] = {}
    if nodes:
        known: list[NodeShape | str] = [
            member for group in (cluster.nodes.groups if cluster.nodes else ()) for member in group.members
        ]
        named = {shape.name for shape in nodes if isinstance(shape, NodeShape)}
        kept = [shape for shape in known if isinstance(shape, NodeShape) and shape.name not in named]
        changes["nodes"] = index_nodes([*kept, *nodes])
    if quotas:
        merged = dict(cluster.quotas)
        for where, by_name in quotas.items():
            mine = {quota.name: quota for quota in merged.get(where, ())} | by_name
            merged[where] = tuple(mine[name] for name in sorted(mine))
        changes["quotas"] = merged
    return dataclasses.replace(cluster, **changes)
