"""Nodes and ResourceQuotas shaped as a 1.33+ API server lists them, and facts built from them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from webhook.core.facts import ClusterFacts
from webhook.core.fit.placement import index_nodes, parse_node
from webhook.core.model.resourcequota import parse_quota

Obj = dict[str, Any]


def node(
    name: str,
    *,
    cpu: str | None = "3920m",
    memory: str | None = "15Gi",
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    unschedulable: bool = False,
    zone: str = "eu-west-1a",
) -> Obj:
    """A Node as `GET /api/v1/nodes` lists it (capacity, allocatable, conditions, images)."""
    allocatable = {k: v for k, v in (("cpu", cpu), ("memory", memory), ("pods", "110"),
                                       ("ephemeral-storage", "95551679124")) if v is not None}  # fmt: skip
    spec: Obj = {"podCIDR": "10.244.1.0/24", "providerID": f"aws:///{zone}/i-{name}"}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": zone, **(labels or {}),
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": spec,
        "status": {
            "capacity": dict(allocatable),
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "lastHeartbeatTime": "2026-11-27T10:00:00Z"}],
            "images": [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 320368}],
            "nodeInfo": {"kubeletVersion": "v1.33.1", "operatingSystem": "linux", "architecture": "amd64"},
        },
    }  # fmt: skip


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect} if value else {"key": key, "effect": effect}


def quota(
    name: str = "compute",
    *,
    hard: Mapping[str, str],
    used: Mapping[str, str] | None = None,
    namespace: str = "shop",
    scopes: Sequence[str] = (),
    scope_selector: Sequence[Mapping[str, Any]] = (),
) -> Obj:
    """A ResourceQuota; `used` None: the quota controller has not written its status yet."""
    spec: Obj = {"hard": dict(hard)}
    if scopes:
        spec["scopes"] = list(scopes)
    if scope_selector:
        spec["scopeSelector"] = {"matchExpressions": [dict(e) for e in scope_selector]}
    body: Obj = {"apiVersion": "v1", "kind": "ResourceQuota",
                 "metadata": {"name": name, "namespace": namespace}, "spec": spec}
    if used is not None:
        body["status"] = {"hard": dict(hard), "used": dict(used)}
    return body


def facts(nodes: Sequence[Obj] | None = None, quotas: Sequence[Obj] = (), **more: Any) -> ClusterFacts:
    index = None if nodes is None else index_nodes([parse_node(n) for n in nodes])
    return ClusterFacts(nodes=index, quotas=tuple(parse_quota(q) for q in quotas), **more)


def daemonset(
    name: str,
    *,
    cpu: str | None = "400m",
    memory: str | None = "200Mi",
    namespace: str = "kube-system",
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, str]] = (),
    host_network: bool = False,
) -> Obj:
    """A DaemonSet as `GET /apis/apps/v1/daemonsets` lists it (defaults filled in, status written)."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    spec: Obj = {
        "containers": [{
            "name": name, "image": f"registry.k8s.io/{name}:v1.0.0", "imagePullPolicy": "IfNotPresent",
            "resources": {"requests": requests, **({"limits": {"memory": memory}} if memory else {})},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        }],
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
        "securityContext": {}, "schedulerName": "default-scheduler",
        "priorityClassName": "system-node-critical",
    }
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if host_network:
        spec["hostNetwork"] = True
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "generation": 1,
                     "annotations": {"deprecated.daemonset.template.generation": "1"}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
            "updateStrategy": {"type": "RollingUpdate",
                               "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "revisionHistoryLimit": 10,
        },
        "status": {"currentNumberScheduled": 2, "desiredNumberScheduled": 2, "numberAvailable": 2,
                   "numberMisscheduled": 0, "numberReady": 2, "observedGeneration": 1,
                   "updatedNumberScheduled": 2},
    }  # fmt: skip
