"""Lowering what pod-tailor injected so the Pod still runs: the shared half of node fit and quota (pure).

Both rules ask the same two questions of the Pod as it will be created (its own values with the
injected ones over them): how much does it ask in total, as the scheduler and quota admission count
it (`webhook.core.fit.nodefree.pod_requests`), and which of those values are ours to lower. Only values
injected on this pass are lowered, never one a person set; a lowered request stays within the
LimitRange (min, and the limit/request ratio of a limit it keeps), and a limit that equalled the old
request follows it (the Pod keeps its QoS class).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal
from typing import Any

from webhook.core.fit.nodefree import pod_limits, pod_requests, spec_totals
from webhook.core.model.decision import Cap, Injection
from webhook.core.model.limitrange import LimitRangeItem
from webhook.core.model.patch import PatchBuilder
from webhook.core.model.pod import ContainerRef, containers
from webhook.core.model.quantity import parse_or_none, render
from webhook.core.sizing.resources import container_bounds

__all__ = ["Cap", "CreatedTotals", "Lowered", "as_created", "lower", "totals", "unset"]

_SECTIONS = ("requests", "limits")


def _body_with(body: Mapping[str, Any], values: Mapping[str, str]) -> dict[str, Any]:
    raw = body.get("resources")
    resources: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    new = {section: dict(resources.get(section) or {}) for section in _SECTIONS}
    for key, text in values.items():
        section, resource = key.split(".", 1)
        new[section][resource] = text
    return {**body, "resources": {**resources, **new}}


def as_created(pod: Mapping[str, Any], injections: Sequence[Injection]) -> Mapping[str, Any]:
    """A view of `pod` with the injected requests and limits over its own (for totals and scopes)."""
    values: dict[str, dict[str, str]] = {}
    for injection in injections:
        if injection.field.startswith(("requests.", "limits.")):
            values.setdefault(injection.target, {})[injection.field] = injection.value
    if not values:
        return pod
    spec = dict(pod["spec"])
    for group in ("initContainers", "containers"):
        bodies = spec.get(group)
        if isinstance(bodies, list):
            spec[group] = [
                _body_with(body, values[body.get("name")]) if body.get("name") in values else body
                for body in bodies
            ]
    return {**pod, "spec": spec}


def totals(pod: Mapping[str, Any]) -> dict[str, Decimal]:
    """"requests.cpu", "limits.memory", ... of the whole Pod as the scheduler and quota count them."""
    amounts = {f"requests.{r}": v for r, v in pod_requests(pod).items()}
    amounts.update({f"limits.{r}": v for r, v in pod_limits(pod).items()})
    return amounts


class CreatedTotals:
    """`totals(as_created(pod, injections))` for one decision's Pod, computed once per set of injected
    values: node fit, quota and the charges ask it of the same values, and quantities cost a parse.

    The totals handed out are shared: read them, never change them.
    """

    __slots__ = ("_pod", "_seen")

    def __init__(self, pod: Mapping[str, Any]) -> None:
        self._pod = pod
        self._seen: dict[tuple[tuple[str, str, str], ...], dict[str, Decimal]] = {}

    def of(self, injections: Sequence[Injection]) -> dict[str, Decimal]:
        """The totals of the Pod with `injections` over its own values (what `as_created` reads)."""
        # A tuple of a list: built several times a decision, where a generator would be the slower.
        key = tuple([(i.target, i.field, i.value) for i in injections if i.field.startswith(_VALUES)])
        amounts = self._seen.get(key)
        if amounts is None:
            if _has_statuses(self._pod):
                amounts = totals(as_created(self._pod, injections))
            else:  # the usual Pod at admission: one pass over its spec, no copy (a property holds it equal)
                over: dict[str, dict[str, str]] = {}
                for target, name, value in key:
                    over.setdefault(target, {})[name] = value
                amounts = spec_totals(self._pod, over)
            self._seen[key] = amounts
        return amounts


_VALUES = ("requests.", "limits.")


def _has_statuses(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status")
    if not status:  # a Pod at admission
        return False
    return any(status.get(group) for group in ("containerStatuses", "initContainerStatuses"))


@dataclass(frozen=True, slots=True)
class Lowered:
    caps: tuple[Cap, ...]
    short: Decimal  # how much of the excess could not be taken off (0: all of it)
    # Every value already at its lowest (or none of ours): any larger excess lowers the same way.
    saturated: bool = False


def _step(resource: str) -> Decimal:
    return Decimal("0.001") if resource == "cpu" else Decimal(1)


def _floor(resource: str, amount: Decimal) -> Decimal:
    step = _step(resource)
    return (amount / step).to_integral_value(rounding=ROUND_FLOOR) * step


def lower(
    pod: Mapping[str, Any],
    *,
    field: str,
    excess: Decimal,
    floor: Decimal,
    injections: list[Injection],
    patch: PatchBuilder,
    limit_ranges: Sequence[LimitRangeItem],
    rule: str,
    reason: str,
) -> Lowered:
    """Take `excess` off the values of `field` pod-tailor injected, in proportion, none below `floor`;
    `injections` is updated in place."""
    section, resource = field.split(".", 1)
    ours = [(i, inj) for i, inj in enumerate(injections) if inj.field == field and parse_or_none(inj.value)]
    total = sum((parse_or_none(inj.value) or Decimal(0) for _, inj in ours), Decimal(0))
    if excess <= 0 or total <= 0:
        return Lowered((), max(excess, Decimal(0)), saturated=total <= 0)
    refs = {ref.name: ref for ref in containers(pod)}
    bounds = container_bounds(limit_ranges, resource)
    caps: list[Cap] = []
    left = excess
    saturated = True
    for index, injection in ours:
        before = parse_or_none(injection.value) or Decimal(0)
        ref = refs.get(injection.target)
        if ref is None:
            continue
        share = excess * before / total
        lowest = max(floor, bounds.min or Decimal(0)) if section == "requests" else floor
        if section == "requests":
            kept_limit = _limit_kept(ref, injections, resource, before)
            if kept_limit is not None and bounds.max_ratio:
                lowest = max(lowest, kept_limit / bounds.max_ratio)
        else:  # a limit never below the container's request
            lowest = max(lowest, _request_of(ref, injections, resource) or Decimal(0))
        cut = _floor(resource, before - share)
        saturated = saturated and cut <= lowest
        after = max(cut, lowest)
        if after >= before:
            continue
        text = render(resource, after)
        patch.set((*ref.path, "resources", section, resource), text)
        injections[index] = injection._replace(
            value=text, source=f"{injection.source}; capped to {text}: {reason}"
        )
        left -= before - after
        caps.append(Cap(rule, ref.name, field, render(resource, before), text, reason))
        if section == "requests":
            _follow_limit(ref, injections, patch, resource, before, after)
    return Lowered(tuple(caps), max(left, Decimal(0)), saturated)


def unset(
    pod: Mapping[str, Any], *, field: str, injections: list[Injection], patch: PatchBuilder, rule: str,
    reason: str,
) -> tuple[Cap, ...]:
    """Take every injected value of `field` out of the patch: the Pod as its author wrote it."""
    refs = {ref.name: ref for ref in containers(pod)}
    gone: set[int] = set()
    caps: list[Cap] = []
    for index, injection in enumerate(injections):
        ref = refs.get(injection.target)
        if injection.field == field and ref is not None:
            gone |= _drop(ref, injections, index, patch, field)
            caps.append(Cap(rule, ref.name, field, injection.value, None, reason))
    injections[:] = [inj for i, inj in enumerate(injections) if i not in gone]
    return tuple(caps)


def _limit_kept(ref: ContainerRef, injections: Sequence[Injection], resource: str, request: Decimal) -> (
    Decimal | None
):
    """The limit the container keeps when its request comes down (one a person set, or ours that did
    not equal the request)."""
    for injection in injections:
        if injection.target == ref.name and injection.field == f"limits.{resource}":
            value = parse_or_none(injection.value)
            return None if value == request else value
    return parse_or_none(((ref.body.get("resources") or {}).get("limits") or {}).get(resource))


def _request_of(ref: ContainerRef, injections: Sequence[Injection], resource: str) -> Decimal | None:
    for injection in injections:
        if injection.target == ref.name and injection.field == f"requests.{resource}":
            return parse_or_none(injection.value)
    return parse_or_none(((ref.body.get("resources") or {}).get("requests") or {}).get(resource))


def _follow_limit(
    ref: ContainerRef, injections: list[Injection], patch: PatchBuilder, resource: str,
    before: Decimal, after: Decimal,
) -> None:
    for index, injection in enumerate(injections):
        if injection.target == ref.name and injection.field == f"limits.{resource}":
            if parse_or_none(injection.value) == before:
                text = render(resource, after)
                patch.set((*ref.path, "resources", "limits", resource), text)
                injections[index] = injection._replace(value=text, source=f"{injection.source}; = request")
            return


def _drop(
    ref: ContainerRef, injections: Sequence[Injection], index: int, patch: PatchBuilder, field: str
) -> set[int]:
    """Take the container's injected `field` out of the patch (and, for a request, our limit of that
    resource too: a request left out defaults to the limit). The indexes of the injections to remove."""
    section, resource = field.split(".", 1)
    gone = {index}
    if section == "requests":
        gone |= {i for i, inj in enumerate(injections)
                 if inj.target == ref.name and inj.field == f"limits.{resource}"}
    for i in sorted(gone):
        taken_section, taken = injections[i].field.split(".", 1)
        original = ((ref.body.get("resources") or {}).get(taken_section) or {}).get(taken)
        path = (*ref.path, "resources", taken_section, taken)
        if original is not None:
            patch.set(path, original)
        else:
            patch.drop(path)
    return gone
