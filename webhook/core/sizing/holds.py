"""The autoscaler rule: which container resources pod-tailor must not size from history, and why.

- An HPA that scales on a resource's `Utilization` (metric `Resource`, or `ContainerResource` for
  that container) holds per-Pod usage near target x request. Per-Pod history then measures the
  request itself, and a request sized from it shrinks every build while the HPA adds Pods (or grows
  while it removes them): the loop `bench/autoscaler_loop.py` shows. So that resource keeps the
  author's request, or gets the policy's (an HPA on Utilization cannot work without a request).
  `AverageValue`, custom/external metrics and min == max do not feed back: history stays on.
- A VPA in mode Initial, Recreate, Auto or InPlaceOrRecreate sets the requests of the resources it
  controls when it admits a Pod; two sizers at admission fight in an order nobody chose, so
  pod-tailor leaves those resources (request and limit) to it. VPA sizes regular containers only.

The policy section `autoscalers` turns either off (`hpaUtilization: size`, `vpa: ignore`) and sets
the step limit of steady recommendations (`webhook.core.sizing.steady`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from webhook.core.model.autoscalers import Autoscalers
from webhook.core.model.decision import Note
from webhook.core.model.pod import ContainerRef
from webhook.core.policy.sections import AutoscalerPolicy, HpaUtilization, VpaMode

__all__ = [
    "Hold",
    "container_holds",
    "deferral_notes",
]


@dataclass(frozen=True, slots=True)
class Hold:
    """Why one resource of one container is not sized from history."""

    by: str  # "hpa <name>" or "vpa <name> (<mode>)"
    reason: str  # e.g. "hpa web scales on cpu utilization 70 %"
    defer: bool  # True: leave request and limit alone (a VPA sets them); False: no history (HPA)


def container_holds(scalers: Autoscalers, policy: AutoscalerPolicy, ref: ContainerRef) -> Mapping[str, Hold]:
    """resource -> Hold for one container; a VPA's deferral wins over an HPA's hold."""
    if not scalers:
        return {}
    holds: dict[str, Hold] = {}
    if policy.hpa_utilization is HpaUtilization.KEEP:
        for resource in ("cpu", "memory"):
            hpa_metric = scalers.utilization_hpa(ref, resource)
            if hpa_metric is not None:
                hpa, metric = hpa_metric
                reason = f"hpa {hpa.name} scales on {resource} utilization {metric.utilization} %"
                holds[resource] = Hold(f"hpa {hpa.name}", reason, defer=False)
    if policy.vpa is VpaMode.DEFER and ref.group == "containers":
        for vpa in scalers.vpas:
            for resource in sorted(vpa.controls(ref.name)):
                if resource not in holds or not holds[resource].defer:
                    by = f"vpa {vpa.name} ({vpa.mode})"
                    holds[resource] = Hold(by, f"{by} sets it", defer=True)
    return holds


def _missing(section: object, resource: str) -> bool:
    return not isinstance(section, Mapping) or section.get(resource) is None


def deferral_notes(ref: ContainerRef, holds: Mapping[str, Hold], *, limited: frozenset[str]) -> list[Note]:
    """What was left to a VPA that pod-tailor would otherwise have filled in, one note per VPA.

    `limited`: the resources the policy sets a limit for (so a missing limit counts too).
    """
    resources = ref.body.get("resources") or {}
    by_vpa: dict[str, list[str]] = {}
    for resource, hold in sorted(holds.items()):
        if not hold.defer:
            continue
        if _missing(resources.get("requests"), resource) or (
            resource in limited and _missing(resources.get("limits"), resource)
        ):
            by_vpa.setdefault(hold.by, []).append(resource)
    return [
        Note(ref.name, f"{', '.join(deferred)} left to {vpa}", tuple(deferred))
        for vpa, deferred in by_vpa.items()
    ]
