"""The cluster facts a set of manifests brings along: its autoscalers, its traffic path, Nodes and quotas.

A chart or kustomization ships its HPA, Service and Ingress beside its Deployment. The preview and the
report from manifests read them from the same input, so what they show is what the webhook will do once
everything is applied (`webhook.offline.autoscalers`, `webhook.offline.traffic`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from webhook.core.snapshot import ClusterSnapshot
from webhook.offline.autoscalers import with_manifest_autoscalers
from webhook.offline.fitfacts import with_manifest_nodes_and_quotas
from webhook.offline.traffic import with_manifest_traffic

__all__ = ["with_manifest_facts"]


def with_manifest_facts(
    cluster: ClusterSnapshot, documents: Sequence[Mapping[str, Any]], *, namespace: str | None
) -> ClusterSnapshot:
    """`cluster` with the autoscalers, Services, routes, Nodes and ResourceQuotas found in `documents`."""
    cluster = with_manifest_autoscalers(cluster, documents, namespace=namespace)
    cluster = with_manifest_nodes_and_quotas(cluster, documents, namespace=namespace)
    return with_manifest_traffic(cluster, documents, namespace=namespace)
