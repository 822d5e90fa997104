"""The cluster facts a set of manifests brings along: its autoscalers and its traffic path.

A chart or kustomization ships its HPA, Service and Ingress beside its Deployment. The preview and the
report from manifests read them from the same input, so what they show is what the webhook will do once
everything is applied (`webhook.offline.autoscalers`, `webhook.offline.traffic`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from webhook.core.snapshot import ClusterSnapshot
from webhook.offline.autoscalers import with_manifest_autoscalers
from webhook.offline.traffic import with_manifest_traffic

__all__ = ["with_manifest_facts"]


def with_manifest_facts(
    cluster: ClusterSnapshot, documents: Sequence[Mapping[str, Any]], *, namespace: str | None
) -> ClusterSnapshot:
    """`cluster` with the autoscalers, Services and routes found in `documents` added."""
    cluster = with_manifest_autoscalers(cluster, documents, namespace=namespace)
    return with_manifest_traffic(cluster, documents, namespace=namespace)
