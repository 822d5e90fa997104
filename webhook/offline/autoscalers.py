"""HPAs and VPAs in the manifests handed to the preview: the same rule as in a cluster, offline.

A chart or kustomization usually ships its HorizontalPodAutoscaler (or VerticalPodAutoscaler) beside
its Deployment; the preview reads them from the same input so what it shows is what the webhook would
do once both are applied. They land in the namespace the Pods would (`-n`, else their own, else
`default`), beside whatever the snapshot already had.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from webhook.core.model.autoscalers import Hpa, Ignored, Vpa, index_autoscalers, parse_autoscaler
from webhook.core.snapshot import ClusterSnapshot

__all__ = ["KINDS", "with_manifest_autoscalers"]

KINDS = ("HorizontalPodAutoscaler", "VerticalPodAutoscaler")


def with_manifest_autoscalers(
    cluster: ClusterSnapshot, documents: Iterable[Mapping[str, Any]], *, namespace: str | None
) -> ClusterSnapshot:
    """`cluster` with the autoscalers found in `documents` added; unchanged when there are none."""
    found: list[tuple[str, Hpa | Vpa]] = []
    for document in documents:
        if document.get("kind") not in KINDS:
            continue
        scaler, _ = parse_autoscaler(document)
        if not isinstance(scaler, Ignored):
            meta = document.get("metadata") or {}
            found.append((namespace or str(meta.get("namespace") or "default"), scaler))
    if not found:
        return cluster
    merged = dict(cluster.autoscalers)
    for ns, targets in index_autoscalers(found).items():
        merged[ns] = {**merged.get(ns, {}), **targets}
    return dataclasses.replace(cluster, autoscalers=merged)
