"""The autoscalers around a workload: HorizontalPodAutoscalers and VerticalPodAutoscalers, parsed.

Pure: API objects (or manifests) in, immutable values out. An HPA's `scaleTargetRef` and a VPA's
`targetRef` are mapped to the same (kind, name) identity a Pod's owner maps to
(`webhook.core.model.workload`), so the admission side finds them with one dict lookup. KEDA ScaledObjects
create ordinary HPAs (`keda-hpa-<name>`), so they arrive here like any other. Anything pod-tailor cannot read
(a missing target, a metric type it does not know) is left out with a reason, never an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from webhook.core.model.pod import ContainerRef
from webhook.core.model.quantity import QuantityError, parse
from webhook.core.model.workload import ROLLOUT_HASH_LABEL, WorkloadKey, owner_workload, pod_workload

__all__ = [
    "EMPTY_AUTOSCALERS",
    "ROLLOUT_HASH_LABEL",
    "Autoscalers",
    "Hpa",
    "Ignored",
    "NamespaceAutoscalers",
    "ResourceTarget",
    "Vpa",
    "VpaContainerPolicy",
    "around",
    "index_autoscalers",
    "parse_autoscaler",
    "parse_hpa",
    "parse_vpa",
]

_RESOURCES = ("cpu", "memory")  # what metrics-server reports and a Pod requests
_OTHER_METRICS = ("Pods", "Object", "External")  # scaling on these does not read a request
_VPA_MODES = ("Off", "Initial", "Recreate", "Auto", "InPlaceOrRecreate")
Target = tuple[str, str]  # (kind, name) as `owner_workload` gives it


@dataclass(frozen=True, slots=True)
class ResourceTarget:
    """A `Resource` (whole Pod) or `ContainerResource` (one container) metric of an HPA."""

    resource: str  # cpu | memory
    container: str | None  # ContainerResource: only this container counts
    type: str  # Utilization | AverageValue
    utilization: int | None = None  # percent of the request, for Utilization
    average: Decimal | None = None  # per Pod (cores or bytes), for AverageValue


@dataclass(frozen=True, slots=True)
class Hpa:
    name: str
    target: Target
    min_replicas: int
    max_replicas: int
    resources: tuple[ResourceTarget, ...] = ()  # Resource and ContainerResource metrics
    others: tuple[str, ...] = ()  # other metric types it scales on (Pods, Object, External)

    @property
    def fixed(self) -> bool:
        """min == max: the HPA never changes the replica count, so nothing feeds back."""
        return self.min_replicas >= self.max_replicas


@dataclass(frozen=True, slots=True)
class VpaContainerPolicy:
    container: str  # a container name, or "*" for every container without its own entry
    off: bool  # mode Off: the VPA leaves this container alone
    controlled: frozenset[str]  # controlledResources


@dataclass(frozen=True, slots=True)
class Vpa:
    name: str
    target: Target
    mode: str  # Off | Initial | Recreate | Auto | InPlaceOrRecreate
    policies: tuple[VpaContainerPolicy, ...] = ()

    def controls(self, container: str) -> frozenset[str]:
        """The resources this VPA sets for `container` when it admits a Pod (none in mode Off)."""
        if self.mode == "Off":
            return frozenset()
        own = next((p for p in self.policies if p.container == container), None)
        chosen = own or next((p for p in self.policies if p.container == "*"), None)
        if chosen is None:
            return frozenset(_RESOURCES)
        return frozenset() if chosen.off else chosen.controlled


@dataclass(frozen=True, slots=True)
class Ignored:
    """An object pod-tailor cannot use, and why (logged at debug by the adapter)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Autoscalers:
    """The HPAs and VPAs that target one workload (usually at most one of each)."""

    hpas: tuple[Hpa, ...] = ()
    vpas: tuple[Vpa, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.hpas or self.vpas)

    def utilization_hpa(self, ref: ContainerRef, resource: str) -> tuple[Hpa, ResourceTarget] | None:
        """The HPA (and its metric) that scales on `resource` Utilization counting this container.

        The HPA sums requests over regular containers and native sidecars (a `ContainerResource`
        metric counts its one container), so a plain init container is never scaled on. An HPA with
        min == max never scales, so it does not count. This is "cpu scaled by HPA utilization".
        """
        if ref.group != "containers" and not ref.is_native_sidecar:
            return None
        for hpa in self.hpas:
            if hpa.fixed:
                continue
            for metric in hpa.resources:
                if (
                    metric.resource == resource
                    and metric.type == "Utilization"
                    and metric.container in (None, ref.name)
                ):
                    return hpa, metric
        return None


EMPTY_AUTOSCALERS = Autoscalers()
NamespaceAutoscalers = Mapping[Target, Autoscalers]  # one namespace's, by target


def _target(ref: object, *, where: str) -> Target | Ignored:
    if not isinstance(ref, Mapping) or not ref.get("kind") or not ref.get("name"):
        return Ignored(f"no {where} kind and name")
    kind, name = str(ref["kind"]), str(ref["name"])
    return owner_workload(kind, name)


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _resource_target(kind: str, metric: Mapping[str, Any]) -> ResourceTarget | str:
    """A Resource/ContainerResource metric, or why it does not count."""
    source = metric.get("resource" if kind == "Resource" else "containerResource")
    if not isinstance(source, Mapping):
        return f"{kind} metric without its {kind[0].lower() + kind[1:]} field"
    resource, target = source.get("name"), source.get("target")
    container = str(source["container"]) if kind == "ContainerResource" and source.get("container") else None
    if resource not in _RESOURCES:
        return f"{kind} metric on {resource!r}"
    if kind == "ContainerResource" and container is None:
        return "ContainerResource metric without a container"
    if not isinstance(target, Mapping):
        return f"{kind} metric on {resource} without a target"
    if target.get("type") == "Utilization":
        percent = _int(target.get("averageUtilization"), 0)
        if percent <= 0:
            return f"{resource} Utilization target without a positive averageUtilization"
        return ResourceTarget(str(resource), container, "Utilization", utilization=percent)
    if target.get("type") == "AverageValue":
        try:
            average = parse(target.get("averageValue"))
        except QuantityError:
            return f"{resource} AverageValue target without a readable averageValue"
        return ResourceTarget(str(resource), container, "AverageValue", average=average)
    return f"{resource} target type {target.get('type')!r}"


def _v1_metrics(spec: Mapping[str, Any]) -> list[Any]:
    """autoscaling/v1 (manifests only; the API serves v2): targetCPUUtilizationPercentage."""
    percent = _int(spec.get("targetCPUUtilizationPercentage"), 80)
    return [{"type": "Resource",
             "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": percent}}}]


def parse_hpa(obj: Mapping[str, Any]) -> tuple[Hpa | Ignored, tuple[str, ...]]:
    """An HPA (autoscaling/v2, or v1/v2beta2 in a manifest) and the reasons any metric was left out.

    Defaults as the API server applies them (for manifests that were never defaulted): minReplicas 1,
    no metrics = cpu Utilization 80 %.
    """
    meta, spec = obj.get("metadata") or {}, obj.get("spec")
    name = str(meta.get("name") or "")
    if not name or not isinstance(spec, Mapping):
        return Ignored("no name or spec"), ()
    if str(obj.get("apiVersion", "")).endswith("/v2beta1"):
        return Ignored(f"hpa {name}: autoscaling/v2beta1 is not read (removed in Kubernetes 1.26)"), ()
    target = _target(spec.get("scaleTargetRef"), where="scaleTargetRef")
    if isinstance(target, Ignored):
        return Ignored(f"hpa {name}: {target.reason}"), ()
    raw = _v1_metrics(spec) if obj.get("apiVersion") == "autoscaling/v1" else spec.get("metrics")
    if raw is None or raw == []:
        raw = _v1_metrics({})
    if not isinstance(raw, list):
        return Ignored(f"hpa {name}: spec.metrics is not a list"), ()
    resources: list[ResourceTarget] = []
    others: list[str] = []
    left_out: list[str] = []
    for metric in raw:
        kind = metric.get("type") if isinstance(metric, Mapping) else None
        if kind in ("Resource", "ContainerResource"):
            read = _resource_target(str(kind), metric)
            if isinstance(read, ResourceTarget):
                resources.append(read)
            else:
                left_out.append(f"hpa {name}: {read}")
        elif kind in _OTHER_METRICS:
            others.append(str(kind))
        else:
            left_out.append(f"hpa {name}: metric type {kind!r} is not known")
    max_replicas = _int(spec.get("maxReplicas"), 0)
    if max_replicas < 1:
        return Ignored(f"hpa {name}: no maxReplicas"), tuple(left_out)
    hpa = Hpa(name, target, max(1, _int(spec.get("minReplicas"), 1)), max_replicas, tuple(resources),
              tuple(others))
    return hpa, tuple(left_out)


def parse_vpa(obj: Mapping[str, Any]) -> tuple[Vpa | Ignored, tuple[str, ...]]:
    """A VerticalPodAutoscaler (autoscaling.k8s.io/v1); mode Auto when updatePolicy says nothing."""
    meta, spec = obj.get("metadata") or {}, obj.get("spec")
    name = str(meta.get("name") or "")
    if not name or not isinstance(spec, Mapping):
        return Ignored("no name or spec"), ()
    target = _target(spec.get("targetRef"), where="targetRef")
    if isinstance(target, Ignored):
        return Ignored(f"vpa {name}: {target.reason}"), ()
    mode = str((spec.get("updatePolicy") or {}).get("updateMode") or "Auto")
    if mode not in _VPA_MODES:
        return Ignored(f"vpa {name}: updateMode {mode!r} is not known"), ()
    policies: list[VpaContainerPolicy] = []
    left_out: list[str] = []
    for raw in (spec.get("resourcePolicy") or {}).get("containerPolicies") or ():
        if not isinstance(raw, Mapping):
            left_out.append(f"vpa {name}: a containerPolicies entry is not an object")
            continue
        controlled = raw.get("controlledResources")
        resources = _RESOURCES if controlled is None else tuple(str(r) for r in controlled)
        policies.append(
            VpaContainerPolicy(
                container=str(raw.get("containerName") or "*"),
                off=raw.get("mode") == "Off",
                controlled=frozenset(r for r in resources if r in _RESOURCES),
            )
        )
    return Vpa(name, target, mode, tuple(policies)), tuple(left_out)


def parse_autoscaler(obj: Mapping[str, Any]) -> tuple[Hpa | Vpa | Ignored, tuple[str, ...]]:
    """Either kind, told apart by `kind` (list items of a built-in resource carry none: an HPA)."""
    kind = obj.get("kind")
    if kind == "VerticalPodAutoscaler":
        return parse_vpa(obj)
    if kind in (None, "HorizontalPodAutoscaler"):
        return parse_hpa(obj)
    return Ignored(f"kind {kind!r} is not an autoscaler"), ()


@dataclass
class _Entry:
    hpas: list[Hpa] = field(default_factory=list)
    vpas: list[Vpa] = field(default_factory=list)


def index_autoscalers(parsed: Iterable[tuple[str, Hpa | Vpa]]) -> dict[str, NamespaceAutoscalers]:
    """(namespace, autoscaler) pairs -> namespace -> target -> Autoscalers, each sorted by name."""
    entries: dict[str, dict[Target, _Entry]] = {}
    for namespace, scaler in parsed:
        entry = entries.setdefault(namespace, {}).setdefault(scaler.target, _Entry())
        if isinstance(scaler, Hpa):
            entry.hpas.append(scaler)
        else:
            entry.vpas.append(scaler)
    return {
        namespace: MappingProxyType({
            target: Autoscalers(tuple(sorted(e.hpas, key=lambda h: h.name)),
                                tuple(sorted(e.vpas, key=lambda v: v.name)))
            for target, e in targets.items()
        })
        for namespace, targets in entries.items()
    }


def _rollout(pod: Mapping[str, Any]) -> Target | None:
    """An Argo Rollout's Pod: its ReplicaSet is `<rollout>-<rollouts-pod-template-hash>`."""
    metadata = pod.get("metadata") or {}
    template_hash = (metadata.get("labels") or {}).get(ROLLOUT_HASH_LABEL)
    if not template_hash:
        return None
    for ref in metadata.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("kind") == "ReplicaSet":
            name = str(ref.get("name") or "")
            if name.endswith("-" + template_hash):
                return "Rollout", name[: -len(template_hash) - 1]
    return None


def around(index: NamespaceAutoscalers, pod: Mapping[str, Any], workload: WorkloadKey | None) -> Autoscalers:
    """The autoscalers targeting the workload of `pod` (`workload`, else the Pod's own owner chain).

    A Rollout's Pods are profiled under the Deployment-shaped key their ReplicaSet's name gives
    (`web-6d8f9c7b5` -> Deployment web: profiles and admission agree on it), but an HPA or VPA names
    the Rollout; the Pod's `rollouts-pod-template-hash` label says which Rollout it is.
    """
    if not index:  # most namespaces: nothing to look up, not even the workload
        return EMPTY_AUTOSCALERS
    key = workload or pod_workload(pod, "")
    target = _rollout(pod) or (key.kind, key.name)
    return index.get(target, EMPTY_AUTOSCALERS)
