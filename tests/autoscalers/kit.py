"""HPAs and VPAs as a 1.33 API server returns them, and the small builders the autoscaler tests share.

The objects are what `kubectl get -o json` prints for an object created by `kubectl apply` and worked
on by its controller: managedFields of both managers, the status the HPA controller writes every 15 s
(the VPA recommender every minute), `minReplicas` defaulted. The fake API server (tests/kubefake.py)
adds resourceVersion, uid and creationTimestamp and drops apiVersion/kind from HPA list items, as
the real one does for built-in resources.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from webhook.core.facts import ClusterFacts
from webhook.core.model.autoscalers import Hpa, Ignored, Vpa, index_autoscalers, parse_autoscaler
from webhook.core.model.profile import Evidence, Recommendation, UsageTotals

MIB = 2**20
STAMP = "2026-05-04T09:12:44Z"
VPA_PREFIX = "/apis/autoscaling.k8s.io/v1"


def utilization(resource: str, percent: int, container: str | None = None) -> dict[str, Any]:
    target = {"type": "Utilization", "averageUtilization": percent}
    if container is None:
        return {"type": "Resource", "resource": {"name": resource, "target": target}}
    return {
        "type": "ContainerResource",
        "containerResource": {"name": resource, "container": container, "target": target},
    }


def average_value(resource: str, value: str) -> dict[str, Any]:
    return {
        "type": "Resource",
        "resource": {"name": resource, "target": {"type": "AverageValue", "averageValue": value}},
    }


def external(name: str = "s0-prometheus", value: str = "100") -> dict[str, Any]:
    return {
        "type": "External",
        "external": {
            "metric": {"name": name, "selector": {"matchLabels": {"scaledobject.keda.sh/name": "web"}}},
            "target": {"type": "AverageValue", "averageValue": value},
        },
    }


def _current(metric: Mapping[str, Any]) -> dict[str, Any] | None:
    if metric["type"] == "Resource":
        name = metric["resource"]["name"]
        return {
            "type": "Resource",
            "resource": {
                "name": name,
                "current": {
                    "averageValue": "210m" if name == "cpu" else "201326592",
                    "averageUtilization": 42,
                },
            },
        }
    if metric["type"] == "ContainerResource":
        source = metric["containerResource"]
        return {
            "type": "ContainerResource",
            "containerResource": {
                "name": source["name"],
                "container": source.get("container"),
                "current": {"averageValue": "180m", "averageUtilization": 36},
            },
        }
    key = str(metric["type"])[:1].lower() + str(metric["type"])[1:]
    if key not in ("pods", "object", "external"):  # a type this API version does not know: no status
        return None
    return {"type": metric["type"], key: {"metric": metric[key]["metric"], "current": {"averageValue": "37"}}}


def hpa(
    name: str = "web",
    *,
    metrics: Sequence[dict[str, Any]] = (),
    target: tuple[str, str, str] = ("apps/v1", "Deployment", "web"),
    min_replicas: int = 2,
    max_replicas: int = 10,
    namespace: str = "shop",
    replicas: int = 3,
) -> dict[str, Any]:
    """An autoscaling/v2 HPA; cpu Utilization 70 % unless `metrics` says otherwise."""
    metrics = list(metrics) or [utilization("cpu", 70)]
    api_version, kind, target_name = target
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}\n"},
            "managedFields": [
                {
                    "manager": "kubectl-client-side-apply",
                    "operation": "Update",
                    "apiVersion": "autoscaling/v2",
                    "time": STAMP,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {
                            "f:annotations": {
                                ".": {},
                                "f:kubectl.kubernetes.io/last-applied-configuration": {},
                            }
                        },
                        "f:spec": {
                            "f:maxReplicas": {},
                            "f:metrics": {},
                            "f:minReplicas": {},
                            "f:scaleTargetRef": {},
                        },
                    },
                },
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "apiVersion": "autoscaling/v2",
                    "time": STAMP,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:status": {
                            "f:conditions": {
                                ".": {},
                                'k:{"type":"AbleToScale"}': {
                                    ".": {},
                                    "f:lastTransitionTime": {},
                                    "f:message": {},
                                    "f:reason": {},
                                    "f:status": {},
                                    "f:type": {},
                                },
                            },
                            "f:currentMetrics": {},
                            "f:currentReplicas": {},
                            "f:desiredReplicas": {},
                        }
                    },
                    "subresource": "status",
                },
            ],
        },
        "spec": {
            "scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": target_name},
            "minReplicas": min_replicas,
            "maxReplicas": max_replicas,
            "metrics": metrics,
        },
        "status": {
            "currentReplicas": replicas,
            "desiredReplicas": replicas,
            "currentMetrics": [found for m in metrics if (found := _current(m)) is not None],
            "conditions": [
                {
                    "type": "AbleToScale",
                    "status": "True",
                    "lastTransitionTime": STAMP,
                    "reason": "ReadyForNewScale",
                    "message": "recommended size matches current size",
                },
                {
                    "type": "ScalingActive",
                    "status": "True",
                    "lastTransitionTime": STAMP,
                    "reason": "ValidMetricFound",
                    "message": "the HPA was able to successfully calculate a replica "
                    "count from cpu resource utilization (percentage of request)",
                },
                {
                    "type": "ScalingLimited",
                    "status": "False",
                    "lastTransitionTime": STAMP,
                    "reason": "DesiredWithinRange",
                    "message": "the desired count is within the acceptable range",
                },
            ],
        },
    }


def keda_hpa(scaled_object: str = "web", *, metrics: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The HPA KEDA's operator makes for a ScaledObject (`keda-hpa-<name>`): External metrics by default."""
    made = hpa(
        f"keda-hpa-{scaled_object}", metrics=list(metrics) or [external()], min_replicas=1, max_replicas=100
    )
    made["metadata"]["labels"] = {
        "app.kubernetes.io/managed-by": "keda-operator",
        "app.kubernetes.io/name": f"keda-hpa-{scaled_object}",
        "app.kubernetes.io/part-of": scaled_object,
        "app.kubernetes.io/version": "2.17.2",
        "scaledobject.keda.sh/name": scaled_object,
    }
    made["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "keda.sh/v1alpha1",
            "kind": "ScaledObject",
            "name": scaled_object,
            "uid": "6f1f7d0e-49b1-4b61-8d0c-2b1d3a9f0c11",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    del made["metadata"]["annotations"]
    return made


def vpa(
    name: str = "web",
    *,
    mode: str | None = "Auto",
    policies: Sequence[dict[str, Any]] | None = None,
    target: tuple[str, str, str] = ("apps/v1", "Deployment", "web"),
    namespace: str = "shop",
) -> dict[str, Any]:
    """An autoscaling.k8s.io/v1 VerticalPodAutoscaler with the recommender's status."""
    api_version, kind, target_name = target
    spec: dict[str, Any] = {"targetRef": {"apiVersion": api_version, "kind": kind, "name": target_name}}
    if mode is not None:
        spec["updatePolicy"] = {"updateMode": mode}
    if policies is not None:
        spec["resourcePolicy"] = {"containerPolicies": list(policies)}
    bound = {"cpu": "25m", "memory": "262144k"}
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "generation": 1,
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}\n"},
        },
        "spec": spec,
        "status": {
            "conditions": [{"type": "RecommendationProvided", "status": "True", "lastTransitionTime": STAMP}],
            "recommendation": {
                "containerRecommendations": [
                    {
                        "containerName": "app",
                        "lowerBound": bound,
                        "target": {"cpu": "35m", "memory": "262144k"},
                        "uncappedTarget": {"cpu": "35m", "memory": "262144k"},
                        "upperBound": {"cpu": "1510m", "memory": "1577386659"},
                    }
                ]
            },
        },
    }


def as_listed(obj: Mapping[str, Any], resource_version: int = 4711) -> dict[str, Any]:
    """The object as a list item of a built-in resource: no apiVersion/kind, server metadata added."""
    item = copy.deepcopy(dict(obj))
    if item.get("apiVersion") == "autoscaling/v2":
        item.pop("apiVersion")
        item.pop("kind")
    item["metadata"] |= {
        "resourceVersion": str(resource_version),
        "uid": "0b8b5a3e-8d0f-4a55-9c1e-5d0c7f6b2a90",
        "creationTimestamp": STAMP,
    }
    return item


def facts(*objects: Mapping[str, Any], namespace: str = "shop") -> ClusterFacts:
    """ClusterFacts holding these HPAs and VPAs (those pod-tailor cannot use are left out)."""
    found: list[tuple[str, Hpa | Vpa]] = []
    for obj in objects:
        scaler, _ = parse_autoscaler(obj)
        if not isinstance(scaler, Ignored):
            found.append((namespace, scaler))
    return ClusterFacts(server_version=(1, 33), autoscalers=index_autoscalers(found).get(namespace, {}))


def recommendation(
    cpu: str = "0.25",
    memory: int = 300 * MIB,
    *,
    confidence: float = 0.9,
    totals: UsageTotals | None = None,
    **extra: Any,
) -> Recommendation:
    evidence = Evidence(
        window="14d",
        samples=4032,
        hours=336,
        cpu_percentile=95,
        memory_margin=0.15,
        confidence=confidence,
        oom_kills=extra.pop("oom_kills", 0),
    )
    return Recommendation(cpu=Decimal(cpu), memory=Decimal(memory), evidence=evidence, totals=totals, **extra)
