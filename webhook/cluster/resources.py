"""The collections the cluster refresher lists and watches, one `WatchSpec` each.

A feature that needs more of the cluster (autoscalers, the traffic path) adds its specs here and
reads the objects in `webhook.cluster.snapshot.build_snapshot`; the refresher, readiness, metrics
and failure handling are the same for every collection.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from webhook.cluster.watch import ListCall, Obj, without_status
from webhook.config.settings import Settings

__all__ = [
    "DAEMONSETS",
    "GRPCROUTES",
    "HPAS",
    "HTTPROUTES",
    "INGRESSCLASSES",
    "INGRESSES",
    "NAMESPACES",
    "NODES",
    "RESOURCEQUOTAS",
    "SERVICES",
    "VPAS",
    "WatchSpec",
    "custom_list",
    "daemonset_essentials",
    "node_essentials",
    "quota_essentials",
    "watch_specs",
]


@dataclass(frozen=True, slots=True)
class WatchSpec:
    """One collection: how to list it, whether it may be absent, and what of its objects matters."""

    resource: str  # plural, unique; the key in `build_snapshot`'s objects and the metrics' label
    list_call: Callable[[Any, Settings], ListCall]  # (ApiClient, settings) -> a bound list method
    optional: bool = False  # a CRD that may not be installed: 404 = empty, asked again every resync
    field_selector: Callable[[Settings], str | None] | None = None
    relevant: Callable[[Obj], Hashable] | None = without_status  # None: every event counts
    enabled: Callable[[Settings], bool] = lambda _settings: True
    # A collection a feature can do without: a 403 (no RBAC for it) is "not known", not a failure.
    forbidden_ok: bool = False
    keep: Callable[[Obj], Obj] | None = None  # what of each object is stored (see `Watched`)


def custom_list(group: str, version: str, plural: str) -> Callable[[Any, Settings], ListCall]:
    """The cluster-wide list of a custom resource (for `WatchSpec.list_call`)."""

    def bind(api: Any, _settings: Settings) -> ListCall:
        custom = client.CustomObjectsApi(api)
        return functools.partial(custom.list_cluster_custom_object, group, version, plural)

    return bind


def _labels_only(obj: Obj) -> Hashable:
    return tuple(sorted(((obj.get("metadata") or {}).get("labels") or {}).items()))


def _spec_only(obj: Obj) -> Hashable:
    """An autoscaler's spec: its status (an HPA's every 15 s, a VPA's every minute) is never read."""
    return json.dumps(obj.get("spec"), sort_keys=True, default=str)


def _spec_and_annotations(obj: Obj) -> Hashable:
    """A Service's or route's spec and annotations: a load balancer's status (its address) is not read."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return json.dumps([obj.get("spec"), annotations], sort_keys=True, default=str)


def node_essentials(obj: Obj) -> Obj:
    """What node fit reads of a Node (`webhook.core.fit.placement`): name, labels, taints, schedulability and
    allocatable cpu and memory. A Node's images, conditions and managed fields are most of its size."""
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    allocatable = status.get("allocatable") if isinstance(status.get("allocatable"), dict) else None
    kept_spec = {key: spec[key] for key in ("taints", "unschedulable") if key in spec}
    return {
        "metadata": {key: meta[key] for key in ("name", "resourceVersion", "labels") if key in meta},
        "spec": kept_spec,
        "status": {} if allocatable is None else {
            "allocatable": {key: allocatable[key] for key in ("cpu", "memory") if key in allocatable}
        },
    }


_TEMPLATE_KEYS = (
    "containers", "initContainers", "overhead", "resources", "nodeSelector", "affinity", "tolerations", "os",
    "hostNetwork",
)
_CONTAINER_KEYS = ("name", "resources", "restartPolicy")


def daemonset_essentials(obj: Obj) -> Obj:
    """What `webhook.core.fit.daemonsets` reads of a DaemonSet: its Pods' requests and placement. Images,
    volumes, commands and the status (rewritten as its Pods come and go) are never read."""
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    template = spec.get("template")
    template = template if isinstance(template, dict) else {}
    pod = template.get("spec")
    pod = pod if isinstance(pod, dict) else {}
    kept = {key: pod[key] for key in _TEMPLATE_KEYS if key in pod}
    for group in ("containers", "initContainers"):
        if isinstance(kept.get(group), list):
            kept[group] = [
                {key: c[key] for key in _CONTAINER_KEYS if key in c} if isinstance(c, dict) else c
                for c in kept[group]
            ]
    return {
        "metadata": {key: meta[key] for key in ("name", "namespace", "resourceVersion")
                     if key in meta},
        "spec": {"template": {"spec": kept}},
    }


def _node_relevant(obj: Obj) -> Hashable:
    """A Node's heartbeat status writes change nothing node fit reads."""
    return json.dumps([(obj.get("metadata") or {}).get("labels"), obj.get("spec"), obj.get("status")],
                      sort_keys=True, default=str)


def quota_essentials(obj: Obj) -> Obj:
    """What `webhook.core.model.resourcequota` reads of a ResourceQuota: hard, scopes, and status.used."""
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    return {
        "metadata": {key: meta[key] for key in ("name", "namespace", "resourceVersion") if key in meta},
        "spec": {key: spec[key] for key in ("hard", "scopes", "scopeSelector") if key in spec},
        "status": {key: status[key] for key in ("used",) if key in status},
    }


NAMESPACES = "namespaces"
SERVICES = "services"
INGRESSES = "ingresses"
INGRESSCLASSES = "ingressclasses"
HTTPROUTES = "httproutes"
GRPCROUTES = "grpcroutes"
HPAS = "horizontalpodautoscalers"
VPAS = "verticalpodautoscalers"
NODES = "nodes"
DAEMONSETS = "daemonsets"
RESOURCEQUOTAS = "resourcequotas"

_SPECS: tuple[WatchSpec, ...] = (
    # Namespace labels choose the mode and the policy; nothing else of a Namespace is read.
    WatchSpec(NAMESPACES, lambda api, _s: client.CoreV1Api(api).list_namespace, relevant=_labels_only),
    WatchSpec("limitranges", lambda api, _s: client.CoreV1Api(api).list_limit_range_for_all_namespaces),
    # The policy ConfigMap, by name, in pod-tailor's own namespace.
    WatchSpec(
        "configmaps",
        lambda api, s: functools.partial(client.CoreV1Api(api).list_namespaced_config_map, s.namespace),
        field_selector=lambda s: f"metadata.name={s.policy_configmap}",
        enabled=lambda s: bool(s.policy_configmap),
    ),
    # The autoscalers around each workload (webhook.core.model.autoscalers); VPAs only where the CRD is
    # served.
    WatchSpec(
        HPAS,
        lambda api, _s: client.AutoscalingV2Api(api).list_horizontal_pod_autoscaler_for_all_namespaces,
        relevant=_spec_only,
    ),
    WatchSpec(VPAS, custom_list("autoscaling.k8s.io", "v1", VPAS), optional=True, relevant=_spec_only),
    # The traffic path (webhook.core.serving.traffic): Services, the Ingresses and routes to them, and the
    # IngressClasses that name the controller; Gateway API routes only where their CRDs are served.
    WatchSpec(
        SERVICES, lambda api, _s: client.CoreV1Api(api).list_service_for_all_namespaces,
        relevant=_spec_and_annotations,
    ),
    WatchSpec(
        INGRESSES, lambda api, _s: client.NetworkingV1Api(api).list_ingress_for_all_namespaces,
        relevant=_spec_and_annotations,
    ),
    WatchSpec(
        INGRESSCLASSES, lambda api, _s: client.NetworkingV1Api(api).list_ingress_class,
        relevant=_spec_and_annotations,
    ),
    WatchSpec(
        HTTPROUTES, custom_list("gateway.networking.k8s.io", "v1", HTTPROUTES), optional=True,
        relevant=_spec_and_annotations,
    ),
    WatchSpec(
        GRPCROUTES, custom_list("gateway.networking.k8s.io", "v1", GRPCROUTES), optional=True,
        relevant=_spec_and_annotations,
    ),
    # Node fit (webhook.core.fit.placement) and quota (webhook.core.model.resourcequota): without them (no
    # RBAC) the Pod is sized as before, and /readyz says so. Quotas count every event: their status is what is
    # read.
    WatchSpec(
        NODES, lambda api, _s: client.CoreV1Api(api).list_node, relevant=_node_relevant,
        forbidden_ok=True, keep=node_essentials,
    ),
    # What DaemonSets take on each node (webhook.core.fit.daemonsets): without them, nodes count whole.
    WatchSpec(
        DAEMONSETS, lambda api, _s: client.AppsV1Api(api).list_daemon_set_for_all_namespaces,
        relevant=_spec_only, forbidden_ok=True, keep=daemonset_essentials,
    ),
    WatchSpec(
        RESOURCEQUOTAS, lambda api, _s: client.CoreV1Api(api).list_resource_quota_for_all_namespaces,
        relevant=None, forbidden_ok=True, keep=quota_essentials,
    ),
)


def watch_specs(settings: Settings) -> tuple[WatchSpec, ...]:
    """The collections to watch under `settings`."""
    return tuple(spec for spec in _SPECS if spec.enabled(settings))
