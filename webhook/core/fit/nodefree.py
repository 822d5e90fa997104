"""What is still free on a node: its allocatable minus what the Pods bound to it request (pure).

The scheduler and the kubelet count a Pod's effective requests: the larger of its init containers'
(each one alone, plus the restartable ones started before it) and the sum of its regular containers
and restartable init containers, plus `overhead`; pod-level `spec.resources` where set. For a Pod in
the middle of a resize they take the largest of what the spec asks, what the kubelet allocated and
what runs (KEP-1287), except a desired value the kubelet found Infeasible. A resize up is asked only
when its increase fits what is free, so pod-tailor never leaves a Pod `PodResizePending`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from webhook.core.model.quantity import QuantityError, parse

__all__ = ["RESOURCES", "cpu_memory", "free_allocatable", "pod_limits", "pod_requests", "spec_totals"]

RESOURCES = ("cpu", "memory")
_DONE = ("Succeeded", "Failed")
_ZERO = Decimal(0)


def cpu_memory(section: object) -> dict[str, Decimal]:
    """The cpu and memory of a requests/limits/allocatable mapping; absent or unreadable ones left out."""
    out: dict[str, Decimal] = {}
    if not section or not (type(section) is dict or isinstance(section, Mapping)):  # dict: decoded JSON
        return out
    for resource in RESOURCES:
        raw = section.get(resource)
        if raw is None:
            continue
        try:
            out[resource] = parse(raw)
        except QuantityError:
            continue
    return out


def _largest(*amounts: Mapping[str, Decimal]) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    for values in amounts:
        for resource, value in values.items():
            out[resource] = max(out.get(resource, Decimal(0)), value)
    return out


def _infeasible(pod: Mapping[str, Any]) -> bool:
    return any(
        isinstance(c, Mapping) and c.get("type") == "PodResizePending" and c.get("reason") == "Infeasible"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


def pod_requests(pod: Mapping[str, Any]) -> dict[str, Decimal]:
    """The Pod's effective cpu and memory requests as the scheduler counts them on its node (and quota
    admission counts them against `requests.*`)."""
    return _effective(pod, "requests")


def pod_limits(pod: Mapping[str, Any]) -> dict[str, Decimal]:
    """The Pod's cpu and memory limits as quota admission counts them against `limits.*` (a container
    without a limit counts nothing: a quota on limits refuses such a Pod anyway)."""
    return _effective(pod, "limits")


def _effective(pod: Mapping[str, Any], section: str) -> dict[str, Decimal]:
    """Pod-level `spec.resources` where set, else the containers' (init peaks against the running sum),
    plus `overhead`."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    pod_level = cpu_memory((spec.get("resources") or {}).get(section))
    statuses = {
        s.get("name"): s
        for group in ("containerStatuses", "initContainerStatuses")
        for s in status.get(group) or ()
        if isinstance(s, Mapping)
    } if status else {}
    desired_counts = not status or not _infeasible(pod)

    def container(body: Mapping[str, Any]) -> dict[str, Decimal]:
        if not statuses:  # a Pod not yet created (admission, preview): its spec is all there is
            return cpu_memory((body.get("resources") or {}).get(section))
        seen = statuses.get(body.get("name")) or {}
        desired = cpu_memory((body.get("resources") or {}).get(section)) if desired_counts else {}
        actual = cpu_memory((seen.get("resources") or {}).get(section))
        allocated = cpu_memory(seen.get("allocatedResources")) if section == "requests" else {}
        return _largest(desired, actual, allocated)

    total: dict[str, Decimal] = {}
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for body in spec.get("initContainers") or ():
        values = container(body)
        if body.get("restartPolicy") == "Always":
            sidecars = {r: sidecars.get(r, Decimal(0)) + values.get(r, Decimal(0)) for r in RESOURCES}
        else:
            during = {r: sidecars.get(r, Decimal(0)) + values.get(r, Decimal(0)) for r in RESOURCES}
            init_peak = _largest(init_peak, during)
    for body in spec.get("containers") or ():
        for resource, value in container(body).items():
            total[resource] = total.get(resource, Decimal(0)) + value
    overhead = cpu_memory(spec.get("overhead"))
    effective: dict[str, Decimal] = {}
    for r in RESOURCES:
        running = total.get(r, _ZERO) + sidecars.get(r, _ZERO)
        effective[r] = pod_level.get(r, max(running, init_peak.get(r, _ZERO))) + overhead.get(r, _ZERO)
    return effective


_KEYS = tuple((section, resource, f"{section}.{resource}")
              for section in ("requests", "limits") for resource in RESOURCES)  # fmt: skip


def _container_values(body: Mapping[str, Any], over: Mapping[str, str] | None) -> dict[str, Decimal]:
    """"requests.cpu" ... of one container, `over` (key -> quantity text) over its own values: each
    value parsed once, an injected one instead of the container's own (an unreadable one: absent)."""
    resources = body.get("resources")
    if not resources or not (type(resources) is dict or isinstance(resources, Mapping)):
        resources = _NO_VALUES
    parsed: dict[str, Decimal] = {}
    raw: object
    for section, resource, key in _KEYS:
        if over and key in over:
            raw = over[key]
        else:
            values = resources.get(section)
            if not values or not (type(values) is dict or isinstance(values, Mapping)):
                continue
            raw = values.get(resource)
            if raw is None:
                continue
        try:
            parsed[key] = parse(raw)
        except QuantityError:
            continue
    return parsed


_NO_VALUES: Mapping[str, Any] = {}
_ORDER = tuple(key for _section, _resource, key in _KEYS)
_NAMES = frozenset(_ORDER)


def spec_totals(pod: Mapping[str, Any], over: Mapping[str, Mapping[str, str]]) -> dict[str, Decimal]:
    """`pod_requests` and `pod_limits` (as "requests.cpu", ... "limits.memory") of a Pod that is not
    created yet (no container statuses: its spec is all there is), with `over` (container name ->
    "requests.cpu" -> quantity text) over its containers' own values, in one pass and without a copy
    of the Pod: what node fit, quota and the charges ask of each set of values pod-tailor injects."""
    spec = pod.get("spec") or {}
    total: dict[str, Decimal] = {}
    if not spec.get("initContainers") and not spec.get("overhead") and not spec.get("resources"):
        for body in spec.get("containers") or ():  # the usual Pod: its containers' sum is all there is
            for key, value in _container_values(body, over.get(body.get("name"))).items():
                total[key] = total[key] + value if key in total else value
        return {key: _ZERO if (value := total.get(key, _ZERO)) < _ZERO else value for key in _ORDER}
    pod_level = (spec.get("resources") or {})
    level = {section: cpu_memory(pod_level.get(section)) for section in ("requests", "limits")}
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for body in spec.get("initContainers") or ():
        values = _container_values(body, over.get(body.get("name")))
        if body.get("restartPolicy") == "Always":
            for key in _NAMES:
                sidecars[key] = sidecars.get(key, _ZERO) + values.get(key, _ZERO)
        else:
            for key in _NAMES:
                during = sidecars.get(key, _ZERO) + values.get(key, _ZERO)
                if during > init_peak.get(key, _ZERO):
                    init_peak[key] = during
                else:
                    init_peak.setdefault(key, _ZERO)
    for body in spec.get("containers") or ():
        for key, value in _container_values(body, over.get(body.get("name"))).items():
            total[key] = total.get(key, _ZERO) + value
    overhead = cpu_memory(spec.get("overhead"))
    totals: dict[str, Decimal] = {}
    for section, resource, key in _KEYS:
        running = total.get(key, _ZERO) + sidecars.get(key, _ZERO)
        peak = init_peak.get(key, _ZERO)
        totals[key] = level[section].get(resource, running if running >= peak else peak) + overhead.get(
            resource, _ZERO
        )
    return totals


def free_allocatable(node: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> dict[str, Decimal] | None:
    """cpu and memory free on `node` given the `pods` bound to it (finished ones hold nothing); None
    when the node reports no allocatable."""
    allocatable = cpu_memory((node.get("status") or {}).get("allocatable"))
    if set(allocatable) != set(RESOURCES):
        return None
    free = dict(allocatable)
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in _DONE:
            continue
        for resource, value in pod_requests(pod).items():
            free[resource] -= value
    return free
