"""Can the HPA hold its target at the workload's busiest? A check no other sizer makes.

At `maxReplicas` the HPA has no Pods left to add: the usage it can hold at its target is
maxReplicas x request x target (Utilization) or maxReplicas x averageValue (AverageValue). When the
workload's observed peak total (its usage summed over all its Pods, from the profile build) is above
that, every Pod runs over its target at the peak and the service saturates: say so at admission,
with the numbers. An HPA on Utilization also cannot work while a container it counts has no request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from webhook.core.model.autoscalers import Autoscalers, Hpa, ResourceTarget
from webhook.core.model.decision import Injection
from webhook.core.model.pod import containers
from webhook.core.model.profile import Recommendation, UsageTotals, WorkloadProfiles
from webhook.core.model.quantity import QuantityError, parse, render

if TYPE_CHECKING:
    from webhook.core.policy.policies import Policy

__all__ = ["amount", "headroom_warnings", "hpa_warnings"]

Requests = Mapping[str, Mapping[str, Decimal | None]]  # container -> resource -> request after the patch


def amount(resource: str, value: Decimal) -> str:
    """A total as people read it: `3.5 cores`, `1.75Gi`, `640Mi`."""
    if resource == "cpu":
        return f"{_short(value)} cores"
    gib = value / 2**30
    return f"{_short(gib)}Gi" if gib >= 1 else f"{_short(value / 2**20)}Mi"


def _short(value: Decimal) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return text or "0"


def _capacity(hpa: Hpa, metric: ResourceTarget, per_pod: Decimal) -> tuple[Decimal, str]:
    """What the HPA can hold at maxReplicas, and how that was computed."""
    resource, most = metric.resource, hpa.max_replicas
    if metric.type == "Utilization":
        assert metric.utilization is not None
        value = most * per_pod * metric.utilization / 100
        how = f"at maxReplicas {most} x {render(resource, per_pod)} x {metric.utilization} %"
    else:
        assert metric.average is not None
        value = most * metric.average
        how = f"at maxReplicas {most} x {render(resource, metric.average)}"
    return value, f"{how} = {amount(resource, value)}"


def headroom_warnings(
    scalers: Autoscalers,
    *,
    counted: Sequence[str],
    requests: Requests,
    totals: Mapping[str, UsageTotals],
    pod_level: frozenset[str] = frozenset(),
) -> list[str]:
    """Warnings for each HPA metric on a resource: saturation at the observed peak, a missing request.

    `counted`: the containers an HPA sums (regular containers and native sidecars, by name).
    """
    warnings: list[str] = []
    for hpa in scalers.hpas:
        if hpa.fixed:
            continue
        for metric in hpa.resources:
            resource = metric.resource
            names = [name for name in counted if metric.container in (None, name)]
            if not names or resource in pod_level:
                continue
            values = [requests.get(name, {}).get(resource) for name in names]
            if metric.type == "Utilization" and None in values:
                missing = names[values.index(None)]
                warnings.append(f"hpa {hpa.name} scales on {resource} utilization but {missing} has no "
                                f"{resource} request: it cannot scale")
                continue
            peaks = [getattr(totals[name], resource) for name in names if name in totals]
            known = [peak for peak in peaks if peak is not None]
            if not known:
                continue
            capacity, how = _capacity(hpa, metric, sum((v for v in values if v is not None), Decimal(0)))
            peak = sum(known, Decimal(0))
            if capacity < peak:
                warnings.append(f"hpa {hpa.name}: {how} < observed peak {amount(resource, peak)}; "
                                "it will saturate")
    return warnings


def _request(body: Mapping[str, Any], resource: str) -> Decimal | None:
    requests = (body.get("resources") or {}).get("requests")
    if not isinstance(requests, Mapping) or requests.get(resource) is None:
        return None
    try:
        return parse(requests[resource])
    except QuantityError:
        return None


def hpa_warnings(
    scalers: Autoscalers,
    *,
    pod: Mapping[str, Any],
    injections: Iterable[Injection],
    profiles: WorkloadProfiles,
    policy: Policy,
    pod_level: frozenset[str],
) -> list[str]:
    """`headroom_warnings` for a Pod as it will be admitted: its requests with the patch applied, the
    totals of its confident profiles."""
    injected = {(i.target, i.field): i.value for i in injections if i.field.startswith("requests.")}
    counted = [ref for ref in containers(pod) if ref.group == "containers" or ref.is_native_sidecar]
    requests: dict[str, dict[str, Decimal | None]] = {}
    for ref in counted:
        requests[ref.name] = {}
        for resource in ("cpu", "memory"):
            value = injected.get((ref.name, f"requests.{resource}"))
            requests[ref.name][resource] = parse(value) if value is not None else _request(ref.body, resource)
    totals: dict[str, UsageTotals] = {}
    for ref in counted:
        profile = profiles.get(ref.name)
        if (
            isinstance(profile, Recommendation)
            and profile.totals is not None
            and profile.evidence.confidence >= policy.min_confidence
        ):
            totals[ref.name] = profile.totals
    return headroom_warnings(
        scalers, counted=[ref.name for ref in counted], requests=requests, totals=totals, pod_level=pod_level
    )
