"""LimitRange items of type Pod: bounds on the sum of a Pod's containers' requests and limits.

LimitRanger checks them after the mutating webhooks, so a value the engine adds to one container can
get a whole Pod rejected. The Pod's totals are what Kubernetes computes
(`resourcehelper.PodRequests`): app containers and native sidecars add up, and an init container
counts when it alone (with the sidecars started before it) needs more. A resource is in a total when
any container sets it. `max` needs a limit total and bounds both totals, `min` needs a request total
and bounds both from below, `maxLimitRequestRatio` needs both totals, non-zero, and compares them in
thousandths rounded up, as LimitRanger does. Pod-level `spec.resources` are left out: the engine adds
nothing for a resource sized there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from webhook.core.model.decision import Injection
from webhook.core.model.limitrange import LimitRangeItem, ratio_breached
from webhook.core.model.pod import containers
from webhook.core.model.quantity import QuantityError, parse, render

__all__ = ["Added", "Withheld", "breaches", "has_pod_limits", "pod_total", "withhold"]

# (section, container name, resource) -> a value the engine would set ("requests" or "limits")
Added = Mapping[tuple[str, str, str], Decimal]
Withheld = frozenset[tuple[str, str]]  # (resource, "limits" | "all"): what the engine must not set


def has_pod_limits(items: Iterable[LimitRangeItem]) -> bool:
    return any(
        item.type == "Pod" and bool(item.min or item.max or item.max_limit_request_ratio) for item in items
    )


def _values(body: Mapping[str, Any], section: str, added: Added) -> dict[str, Decimal]:
    values: dict[str, Decimal] = {}
    own = (body.get("resources") or {}).get(section) or {}
    for resource, raw in own.items() if isinstance(own, dict) else ():
        try:
            values[str(resource)] = parse(raw)
        except QuantityError:
            continue
    name = str(body.get("name", ""))
    for (where, container, resource), value in added.items():
        if where == section and container == name:
            values[resource] = value  # added, or replacing what LimitRanger set
    return values


def _add(total: dict[str, Decimal], more: Mapping[str, Decimal]) -> dict[str, Decimal]:
    out = dict(total)
    for resource, value in more.items():
        out[resource] = out.get(resource, Decimal(0)) + value
    return out


def pod_total(pod: Mapping[str, Any], section: str, *, added: Added) -> dict[str, Decimal]:
    """The Pod's effective `section` ("requests" or "limits") per resource, `added` filling gaps."""
    total: dict[str, Decimal] = {}
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for ref in containers(pod):  # init containers first, in order
        values = _values(ref.body, section, added)
        if ref.group == "containers":
            total = _add(total, values)
            continue
        if ref.body.get("restartPolicy") == "Always":  # a native sidecar runs beside the app
            total = _add(total, values)
            sidecars = _add(sidecars, values)
            values = sidecars
        else:
            values = _add(values, sidecars)
        for resource, value in values.items():
            init_peak[resource] = max(init_peak.get(resource, value), value)
    for resource, value in init_peak.items():
        total[resource] = max(total.get(resource, value), value)
    return total


def breaches(
    requests: Mapping[str, Decimal], limits: Mapping[str, Decimal], items: Sequence[LimitRangeItem]
) -> dict[str, str]:
    """Per resource, why these Pod totals break a Pod-type LimitRange item (none: they fit)."""
    breached: dict[str, str] = {}
    for item in items:
        if item.type != "Pod":
            continue
        for resource, bound in item.max.items():
            shown = render(resource, bound)
            if resource not in limits:
                breached.setdefault(resource, f"max {shown} per Pod needs a limit")
            elif limits[resource] > bound or requests.get(resource, Decimal(0)) > bound:
                breached.setdefault(resource, f"above the max {shown} per Pod")
        for resource, bound in item.min.items():
            shown = render(resource, bound)
            if resource not in requests:
                breached.setdefault(resource, f"min {shown} per Pod needs a request")
            elif requests[resource] < bound or limits.get(resource, bound) < bound:
                breached.setdefault(resource, f"below the min {shown} per Pod")
        for resource, ratio in item.max_limit_request_ratio.items():
            if ratio_breached(requests.get(resource, Decimal(0)), limits.get(resource, Decimal(0)), ratio):
                breached.setdefault(resource, f"limit/request above {ratio.normalize():f} per Pod")
    return breached


def _added(injections: Iterable[Injection]) -> dict[tuple[str, str, str], Decimal]:
    added = {}
    for injection in injections:
        section, _, resource = injection.field.partition(".")
        if section in ("requests", "limits"):
            added[(section, injection.target, resource)] = parse(injection.value)
    return added


def withhold(
    pod: Mapping[str, Any],
    items: Sequence[LimitRangeItem],
    *,
    sized: Callable[[Withheld], Iterable[Injection]],
) -> tuple[Withheld, list[str]]:
    """What the engine must not set so that its values do not break a Pod-type LimitRange.

    `sized(withheld)` is the engine's resource injections for the Pod when it sets nothing in
    `withheld`. A resource whose totals fit without the engine's values but not with them loses its
    limits first and, if that is not enough, its requests too. A Pod that breaks a LimitRange on its
    own values is not the engine's to mend: those resources keep what the engine adds.
    """

    def breached(withheld: Withheld) -> dict[str, str]:
        added = _added(sized(withheld))
        return breaches(pod_total(pod, "requests", added=added), pod_total(pod, "limits", added=added), items)

    own = breaches(pod_total(pod, "requests", added={}), pod_total(pod, "limits", added={}), items)
    withheld: Withheld = frozenset()
    notes = []
    now = breached(withheld)
    for resource in sorted(now.keys() - own.keys()):
        withheld |= {(resource, "limits")}
        what = "limits"
        if resource in breached(withheld):
            withheld |= {(resource, "all")}
            what = "requests and limits"
        notes.append(f"{resource} {what} not set: Pod LimitRange, {now[resource]}")
    return withheld, notes
