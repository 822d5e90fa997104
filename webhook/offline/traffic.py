"""Services, Ingresses and routes in the manifests handed to the preview: the traffic path, offline.

An app's Service and Ingress usually ship beside its Deployment, so the preview reads them from the
same input and sizes the preStop pause as the webhook will once all are applied. They land in the
namespace the Pods would (`-n`, else their own, else `default`), beside what the snapshot already had.
Without any in the input (and no cluster), the path stays unknown and the policy's default pause is shown.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from webhook.cluster.snapshot import ParseCache, traffic_index
from webhook.core.snapshot import ClusterSnapshot

__all__ = ["KINDS", "with_manifest_traffic"]

KINDS = {
    "Service": "services",
    "Ingress": "ingresses",
    "IngressClass": "ingressclasses",
    "HTTPRoute": "httproutes",
    "GRPCRoute": "grpcroutes",
}


def with_manifest_traffic(
    cluster: ClusterSnapshot, documents: Iterable[Mapping[str, Any]], *, namespace: str | None
) -> ClusterSnapshot:
    """`cluster` with the Services and routes found in `documents` added; unchanged when there are none."""
    objects: dict[str, list[dict[str, Any]]] = {}
    for document in documents:
        plural = KINDS.get(str(document.get("kind")))
        if plural is None or not isinstance(document.get("metadata"), Mapping):
            continue
        placed = copy.deepcopy(dict(document))
        if plural != "ingressclasses":
            placed["metadata"]["namespace"] = namespace or placed["metadata"].get("namespace") or "default"
        objects.setdefault(plural, []).append(placed)
    if "services" not in objects:
        return cluster
    found = traffic_index(objects, ParseCache()) or {}
    merged = {**(cluster.traffic or {}), **found}
    label_keys = {**cluster.label_keys}
    for ns, traffic in found.items():
        label_keys[ns] = cluster.label_keys_read(ns) | traffic.label_keys
    return dataclasses.replace(cluster, traffic=merged, label_keys=label_keys)
