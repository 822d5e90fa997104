"""The QoS class the Pod will have once the patch is applied, as Kubernetes computes it (GetPodQOS).

Said in the annotation so that nobody reads "Guaranteed" into one resource's `limit = request`:
the class belongs to the whole Pod and only cpu and memory count. Guaranteed: every container
(init containers included) has cpu and memory limits, and its requests equal them (a missing request
was already set to the limit by the API server). BestEffort: no cpu or memory request or limit
anywhere. Anything else is Burstable. Pod-level `spec.resources`, where set, decide instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from webhook.core.model.decision import Injection
from webhook.core.model.pod import containers
from webhook.core.model.quantity import QuantityError, parse

__all__ = ["qos_class"]

_COUNTED = ("cpu", "memory")


def _values(section: object) -> dict[str, Decimal]:
    """The readable cpu and memory quantities of a requests or limits section, zero ones included."""
    parsed: dict[str, Decimal] = {}
    for name in _COUNTED:
        raw = section.get(name) if isinstance(section, dict) else None
        if raw is None:
            continue
        try:
            parsed[name] = parse(raw)
        except QuantityError:
            continue
    return parsed


def _positive(values: dict[str, Decimal]) -> dict[str, Decimal]:
    return {name: value for name, value in values.items() if value > 0}  # GetPodQOS skips zeros


def _class(parts: Iterable[tuple[dict[str, Decimal], dict[str, Decimal]]]) -> str:
    any_value, guaranteed = False, True
    for requests, limits in parts:
        # A missing request is its limit (the API server defaults it); an explicit zero one stays zero.
        counted_requests, counted_limits = _positive(limits | requests), _positive(limits)
        any_value = any_value or bool(counted_requests) or bool(counted_limits)
        # Requests never exceed limits in a valid Pod, so GetPodQOS's equal sums are equal parts.
        if set(counted_limits) != set(_COUNTED) or any(
            counted_requests.get(name) != counted_limits[name] for name in _COUNTED
        ):
            guaranteed = False
    if not any_value:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def qos_class(pod: Mapping[str, Any], injections: Iterable[Injection]) -> str:
    """The class of `pod` with `injections` (requests.X / limits.X values) applied."""
    pod_level = pod["spec"].get("resources")
    if isinstance(pod_level, dict) and (
        _positive(_values(pod_level.get("requests"))) or _positive(_values(pod_level.get("limits")))
    ):
        return _class([(_values(pod_level.get("requests")), _values(pod_level.get("limits")))])
    added: dict[tuple[str, str], dict[str, Decimal]] = {}
    for item in injections:
        section, _, name = item.field.partition(".")
        if section in ("requests", "limits") and name in _COUNTED:
            added.setdefault((item.target, section), {})[name] = parse(item.value)
    parts = []
    for ref in containers(pod):
        resources = ref.body.get("resources") or {}
        requests = _values(resources.get("requests")) | added.get((ref.name, "requests"), {})
        limits = _values(resources.get("limits")) | added.get((ref.name, "limits"), {})
        parts.append((requests, limits))
    return _class(parts)
