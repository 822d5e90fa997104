"""Running Pods as pod-tailor admitted them and a 1.35 kubelet runs them, for the right-sizing tests."""

from __future__ import annotations

import copy
import dataclasses
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import jsonpatch
import kubernetes_validate

from tests.autoscalers.kit import MIB, recommendation
from tests.engine.podkit import container, pod, policy
from webhook.core.engine import tailor
from webhook.core.facts import ClusterFacts
from webhook.core.model.profile import Recommendation
from webhook.core.model.qos import qos_class

NOW = 1_790_000_000.0  # a Tuesday, 14:13 UTC
DAY = 86_400.0
ON = policy("inPlace: {enabled: true}", name="rightsize")
AT_BIRTH = {"app": recommendation("0.5", 600 * MIB)}  # what history said when the Pod was created
QUIETER = {"app": recommendation("0.2", 200 * MIB)}  # what it says now


def stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def profiles(cpu: str, memory_mib: int, *, hours: float = 336) -> dict[str, Recommendation]:
    """The workload's profile now: `hours` of history saying `cpu` cores and `memory_mib` MiB."""
    found = recommendation(cpu, memory_mib * MIB)
    return {"app": dataclasses.replace(found, evidence=dataclasses.replace(found.evidence, hours=hours))}


def running(
    name: str = "web-7d4b9c8f6d-abcde",
    *,
    subject: dict[str, Any] | None = None,
    at_birth: dict[str, Recommendation] | None = None,
    started: float = NOW - 3 * DAY,
    node: str = "node-1",
    using: Any = ON,
) -> dict[str, Any]:
    """A Pod admitted by pod-tailor with `at_birth` profiles, Running on `node` since `started`."""
    created = copy.deepcopy(subject or pod())
    created["metadata"].pop("generateName", None)
    created["metadata"]["name"] = name
    created["metadata"].setdefault("labels", {})["pod-template-hash"] = "7d4b9c8f6d"
    decision = tailor(
        created, policy=using, profiles=at_birth or AT_BIRTH, facts=ClusterFacts(server_version=(1, 35))
    )
    admitted: dict[str, Any] = jsonpatch.apply_patch(created, list(decision.ops))
    kubernetes_validate.validate(admitted, kubernetes_validate.latest_version(), strict=True)
    admitted["metadata"]["generation"] = 1
    admitted["spec"]["nodeName"] = node
    statuses = [
        {"name": c["name"], "ready": True, "restartCount": 0,
         "resources": copy.deepcopy(c.get("resources") or {}),
         "allocatedResources": copy.deepcopy((c.get("resources") or {}).get("requests") or {})}
        for c in admitted["spec"]["containers"]
    ]  # fmt: skip
    admitted["status"] = {
        "phase": "Running", "startTime": stamp(started), "qosClass": qos_class(admitted, []),
        "observedGeneration": 1, "containerStatuses": statuses,
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": stamp(started + 30)}],
    }  # fmt: skip
    return admitted


def app(found: dict[str, Any]) -> dict[str, Any]:
    resources: dict[str, Any] = found["spec"]["containers"][0]["resources"]
    return resources


def node(name: str = "node-1", *, cpu: str = "4", memory: str = "16Gi") -> dict[str, Any]:
    """A Node as the API server lists it (allocatable below capacity, as the kubelet reserves some)."""
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/os": "linux", "kubernetes.io/hostname": name}},
        "spec": {"podCIDR": "10.244.1.0/24"},
        "status": {"capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                   "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}],
                   "nodeInfo": {"kubeletVersion": "v1.35.0", "operatingSystem": "linux"}},
    }  # fmt: skip


def pod_metrics(found: dict[str, Any], memory: str, cpu: str = "120m") -> dict[str, Any]:
    """metrics-server's PodMetrics for a Pod (metrics.k8s.io/v1beta1)."""
    meta = found["metadata"]
    return {
        "apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": meta.get("labels", {})},
        "timestamp": stamp(NOW - 15), "window": "15.01s",
        "containers": [{"name": c["name"], "usage": {"cpu": cpu, "memory": memory}}
                       for c in found["spec"]["containers"]],
    }  # fmt: skip


__all__ = [
    "AT_BIRTH",
    "DAY",
    "MIB",
    "NOW",
    "ON",
    "QUIETER",
    "Decimal",
    "app",
    "container",
    "node",
    "pod",
    "pod_metrics",
    "policy",
    "profiles",
    "running",
    "stamp",
]
