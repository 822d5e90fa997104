"""Requests and limits for one container: from a confident profile, else the policy, within every bound.

Bounds, in order: the policy's min/max, the namespace's LimitRange min/max and maxLimitRequestRatio (so
the Pod is not rejected after us), and a limit the person set (a request never exceeds it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

from webhook.core.model.decision import Basis, Injection
from webhook.core.model.limitrange import LimitRangeItem, ratio_breached
from webhook.core.model.patch import PatchBuilder
from webhook.core.model.pod import NO_LIMIT_MARK, ContainerRef
from webhook.core.model.profile import ContainerProfile, Recommendation
from webhook.core.model.quantity import QuantityError, parse, render
from webhook.core.policy.policies import LimitMode, LimitRangerMode, Policy, ResourcePolicy
from webhook.core.sizing.holds import Hold
from webhook.core.sizing.steady import steadied

__all__ = ["Bounds", "container_bounds", "size_container", "usable_recommendation"]


@dataclass(frozen=True, slots=True)
class Bounds:
    """The tightest LimitRange constraints for one resource of a container."""

    min: Decimal | None = None
    max: Decimal | None = None
    max_ratio: Decimal | None = None


_UNBOUNDED = Bounds()


def container_bounds(items: Sequence[LimitRangeItem], resource: str) -> Bounds:
    if not items:
        return _UNBOUNDED
    mins = [item.min[resource] for item in items if item.type == "Container" and resource in item.min]
    maxes = [item.max[resource] for item in items if item.type == "Container" and resource in item.max]
    ratios = [
        item.max_limit_request_ratio[resource]
        for item in items
        if item.type == "Container" and resource in item.max_limit_request_ratio
    ]
    return Bounds(max(mins, default=None), min(maxes, default=None), min(ratios, default=None))


def usable_recommendation(profile: ContainerProfile | None, policy: Policy) -> Recommendation | None:
    if not policy.use_profiles or not isinstance(profile, Recommendation):
        return None
    return profile if profile.evidence.confidence >= policy.min_confidence else None


_STEP = (Decimal(1), Decimal("0.001"))  # the unit values are rounded to: bytes, or thousandths of a CPU


_LIMIT_RANGE = "LimitRange"  # in a bound's note: "raised to LimitRange min", "lowered to LimitRange max"
_STARTUP_PEAK = "start-up CPU peak from profile"


def _round(resource: str, value: Decimal, *, up: bool) -> Decimal:
    step = _STEP[resource == "cpu"]
    return (value / step).to_integral_value(rounding=ROUND_CEILING if up else ROUND_FLOOR) * step


def _profile_source(resource: str, rec: Recommendation) -> str:
    ev = rec.evidence
    basis = (
        f"p{ev.cpu_percentile:g} usage"
        if resource == "cpu"
        else f"peak +{ev.memory_margin * 100:g}%" + (f", {ev.oom_kills} OOM kill(s)" if ev.oom_kills else "")
    )
    return f"profile: {basis} over {ev.window}, {ev.samples} samples, {ev.hours:.0f}h"


def _fallback_source(policy: Policy, profile: ContainerProfile | None, recommended: bool) -> str:
    source = f'from policy "{policy.name}"'
    if recommended or profile is None:
        return source
    if isinstance(profile, Recommendation):
        return f"{source}; profile confidence {profile.evidence.confidence:.2f} < {policy.min_confidence}"
    return f"{source}; no profile: {profile.reason}"


def _read(section: object, resource: str) -> tuple[Decimal | None, str | None]:
    """(value, None), (None, None) when absent, or (None, raw) when present but unreadable.

    A negative amount is unreadable too: the API server refuses it, and no arithmetic may start
    from it (a limit of 2 x -1).
    """
    if not isinstance(section, dict) or section.get(resource) is None:
        return None, None
    try:
        value = parse(section[resource])
    except QuantityError:
        return None, str(section[resource])[:60]
    return (value, None) if value >= 0 else (None, str(section[resource])[:60])


@dataclass(frozen=True, slots=True)
class _Candidate:
    value: Decimal
    source: str
    from_profile: bool
    held: bool = False


def _candidate(
    resource: str,
    *,
    rules: ResourcePolicy,
    policy: Policy,
    profile: ContainerProfile | None,
    hold: Hold | None = None,
) -> _Candidate:
    rec = usable_recommendation(profile, policy)
    if hold is not None:  # an HPA scales on this resource's utilization: history measures the request
        return _Candidate(rules.request, f'from policy "{policy.name}"; {hold.reason}', False, held=True)
    if rec is not None and resource in ("cpu", "memory"):
        steady = steadied(rec, resource, policy.autoscalers.steps)
        source = _profile_source(resource, rec)
        return _Candidate(steady.value, f"{steady.note(resource)}; {source}" if steady.held else source, True)
    return _Candidate(rules.request, _fallback_source(policy, profile, False), False)


def _may_replace(mode: LimitRangerMode, *, from_profile: bool) -> bool:
    return mode is LimitRangerMode.REPLACE or (mode is LimitRangerMode.REPLACE_WITH_PROFILE and from_profile)


def size_container(
    ref: ContainerRef,
    *,
    policy: Policy,
    profile: ContainerProfile | None,
    limit_ranges: Sequence[LimitRangeItem],
    limit_ranger_marks: frozenset[tuple[str, str, str]],
    pod_level: frozenset[str],
    patch: PatchBuilder,
    withheld: frozenset[tuple[str, str]] = frozenset(),
    holds: Mapping[str, Hold] | None = None,
    guessed_before: frozenset[tuple[str, str]] = frozenset(),
) -> tuple[list[Injection], list[str]]:
    """Fill what is missing in one container's requests and limits; returns injections and warnings.

    Per resource the policy manages: read what the container has, decide which of its request and
    limit are pod-tailor's to set (`_whose`), size the request (`_new_request`) and the limit
    (`_new_limit`) within every bound, then write and explain them (`_inject`).

    `guessed_before`: (container, resource) requests an earlier pass set from a guess, without a limit.
    `withheld` holds (resource, "limits") or (resource, "all"): what must not be added (see `podlimits`).
    `holds` (resource -> Hold, see `webhook.core.sizing.holds`): left to a VPA, or not sized from history.
    """
    injections: list[Injection] = []
    warnings: list[str] = []
    resources: Mapping[str, Any] = ref.body.get("resources") or {}
    for resource, rules in policy.resources.items():
        hold = (holds or {}).get(resource)
        if resource in pod_level or (resource, "all") in withheld or (hold is not None and hold.defer):
            continue
        request, bad_request = _read(resources.get("requests"), resource)
        limit, bad_limit = _read(resources.get("limits"), resource)
        if bad_request or bad_limit:
            warnings.append(
                f"{ref.name}: {resource} value {bad_request or bad_limit!r} unreadable; left alone"
            )
            continue
        candidate = _candidate(resource, rules=rules, policy=policy, profile=profile, hold=hold)
        whose = _whose(
            ref.name, resource, request=request, limit=limit, rules=rules, policy=policy, profile=profile,
            candidate=candidate, marks=limit_ranger_marks, withheld=withheld, guessed_before=guessed_before,
        )
        request_is_ours, limit_is_ours = whose.request, whose.limit
        persons = request is not None and (ref.name, "request", resource) not in limit_ranger_marks
        if persons and not request_is_ours and request is not None:
            outside = _outside(resource, request, rules)
            if outside:
                warnings.append(f"{ref.name}: {resource} request {render(resource, request)} {outside}; kept")
        if not request_is_ours and not limit_is_ours:
            continue
        bounds = container_bounds(limit_ranges, resource)
        new_request, request_note = _new_request(
            ref.name, resource, request=request, limit=limit, whose=whose, candidate=candidate, rules=rules,
            bounds=bounds, warnings=warnings,
        )
        new_limit, limit_note = _new_limit(
            ref.name, resource, new_request=new_request, whose=whose, candidate=candidate, rules=rules,
            bounds=bounds, profile=profile, policy=policy, hold=hold, warnings=warnings,
        )
        injections += _inject(
            ref, resource, candidate=candidate, patch=patch,
            request=(request, new_request, request_note) if request_is_ours else None,
            limit=(limit, new_limit, limit_note), no_limit_note=whose.no_limit_note,
        )
    return injections, warnings


@dataclass(frozen=True, slots=True)
class _Whose:
    """Which of a container's request and limit for one resource pod-tailor sets."""

    request: bool
    limit: bool
    no_limit_note: str = ""  # why a limit pod-tailor could set stays unset (the request is a guess)


def _whose(
    name: str,
    resource: str,
    *,
    request: Decimal | None,
    limit: Decimal | None,
    rules: ResourcePolicy,
    policy: Policy,
    profile: ContainerProfile | None,
    candidate: _Candidate,
    marks: frozenset[tuple[str, str, str]],
    withheld: frozenset[tuple[str, str]],
    guessed_before: frozenset[tuple[str, str]],
) -> _Whose:
    """What is missing is pod-tailor's, and what LimitRanger filled in where the policy replaces it;
    a limit only where the request rests on evidence (or the policy derives one from a guess)."""
    replaceable = _may_replace(policy.limit_ranger, from_profile=candidate.from_profile)
    request_is_ours = request is None or (replaceable and (name, "request", resource) in marks)
    limit_is_ours = (resource, "limits") not in withheld and (
        limit is None
        or (replaceable and rules.limit is not LimitMode.NONE and (name, "limit", resource) in marks)
    )
    if not request_is_ours and not limit_is_ours:
        return _Whose(request=False, limit=False)
    evidence = usable_recommendation(profile, policy) is not None and resource in ("cpu", "memory")
    # A limit only from evidence: a request history measured, or history beside a person's request;
    # a person's request alone is no evidence of what the container needs at most (VPA, KRR).
    guessed = not rules.limit_without_history and (
        (request_is_ours and not candidate.from_profile)
        or (not request_is_ours and not evidence)
        or (name, resource) in guessed_before
    )
    if guessed and limit_is_ours and rules.limit is not LimitMode.NONE:
        # The request is the policy's guess: a limit derived from it could kill (memory) or
        # throttle (cpu) a workload nobody has measured yet.
        return _Whose(request=request_is_ours, limit=False, no_limit_note=f"; {NO_LIMIT_MARK}")
    return _Whose(request=request_is_ours, limit=limit_is_ours)


def _new_request(
    name: str,
    resource: str,
    *,
    request: Decimal | None,
    limit: Decimal | None,
    whose: _Whose,
    candidate: _Candidate,
    rules: ResourcePolicy,
    bounds: Bounds,
    warnings: list[str],
) -> tuple[Decimal, str]:
    """The request to serve and its note: the candidate within the policy's and the LimitRange's
    bounds, and never above a limit that stays; a request that is not ours stays as it is."""
    request_is_ours, limit_is_ours = whose.request, whose.limit
    if not request_is_ours:
        assert request is not None  # a missing request is always ours
        return request, ""
    new_request, request_note = _bounded_request(resource, candidate.value, rules=rules, bounds=bounds)
    fixed_limit = None if limit_is_ours else limit
    if fixed_limit is not None and new_request > fixed_limit:
        warnings.append(f"{name}: {resource} request capped at its limit {render(resource, fixed_limit)}")
        new_request, request_note = fixed_limit, f"{request_note}; capped at limit"
    return new_request, request_note


def _new_limit(
    name: str,
    resource: str,
    *,
    new_request: Decimal,
    whose: _Whose,
    candidate: _Candidate,
    rules: ResourcePolicy,
    bounds: Bounds,
    profile: ContainerProfile | None,
    policy: Policy,
    hold: Hold | None,
    warnings: list[str],
) -> tuple[Decimal | None, str]:
    """The limit to set over `new_request` (the one served) and its note; None: none of ours to set."""
    if not whose.limit:
        return None, ""
    # Beside a person's request, history's own value counts when it is the larger (never a limit
    # below what the container was seen to use).
    limit_base = new_request
    if not whose.request and candidate.from_profile and candidate.value > limit_base:
        limit_base = candidate.value
    new_limit, limit_note = _bounded_limit(
        resource, limit_base, rules=rules, bounds=bounds, profile=profile, policy=policy
    )
    if new_limit is not None and limit_base > new_request:
        limit_note += f"; from history's {render(resource, limit_base)}, above the request"
    if new_limit is not None and new_limit <= 0:
        new_limit = None  # a zero request (a person's) never becomes a zero limit
    if hold is not None and new_limit is not None:
        # The request is not history's, but a limit below what history saw would kill or throttle.
        need = _need(resource, profile, policy)
        if need is not None and new_limit < need:
            warnings.append(
                f"{name}: {resource} limit not set: {render(resource, new_limit)} is "
                f"below the {render(resource, need)} history says it uses ({hold.by})"
            )
            new_limit = None
    return new_limit, limit_note


def _inject(
    ref: ContainerRef,
    resource: str,
    *,
    candidate: _Candidate,
    patch: PatchBuilder,
    request: tuple[Decimal | None, Decimal, str] | None,
    limit: tuple[Decimal | None, Decimal | None, str],
    no_limit_note: str,
) -> list[Injection]:
    """Write the values that changed into the patch, each with its explanation.

    `request` (None: not ours) and `limit`: (the container's value, the new one, its note);
    `no_limit_note` says why the request comes without a limit.
    """
    injections: list[Injection] = []
    base = (*ref.path, "resources")
    basis = Basis.HELD if candidate.held else Basis.HISTORY if candidate.from_profile else Basis.POLICY
    if request is not None:
        old_request, new_request, request_note = request
        if new_request != old_request:
            text = render(resource, new_request)
            patch.set((*base, "requests", resource), text)
            source = candidate.source + request_note + no_limit_note
            request_basis = Basis.LIMIT_RANGE if _LIMIT_RANGE in request_note else basis
            injections.append(Injection(ref.name, f"requests.{resource}", text, source, request_basis))
    old_limit, new_limit, limit_note = limit
    if new_limit is not None and new_limit != old_limit:
        text = render(resource, new_limit)
        patch.set((*base, "limits", resource), text)
        limit_basis = (
            Basis.LIMIT_RANGE
            if _LIMIT_RANGE in limit_note
            else Basis.HISTORY
            if limit_note.startswith(_STARTUP_PEAK)
            else basis
        )
        injections.append(Injection(ref.name, f"limits.{resource}", text, limit_note, limit_basis))
    return injections


def _outside(resource: str, value: Decimal, rules: ResourcePolicy) -> str:
    """How a person's request lies outside the policy's bounds ("below the policy min 16Mi"), or ""."""
    if value < rules.min:
        return f"is below the policy min {render(resource, rules.min)}"
    if value > rules.max:
        return f"is above the policy max {render(resource, rules.max)}"
    return ""


def _need(resource: str, profile: ContainerProfile | None, policy: Policy) -> Decimal | None:
    """What history says the container uses, when a hold kept it out of the request."""
    rec = usable_recommendation(profile, policy)
    if rec is None or resource not in ("cpu", "memory"):
        return None
    return rec.cpu if resource == "cpu" else rec.memory


def _bounded_request(
    resource: str, value: Decimal, *, rules: ResourcePolicy, bounds: Bounds
) -> tuple[Decimal, str]:
    note = ""
    if value < rules.min:
        value, note = rules.min, "; raised to policy min"
    elif value > rules.max:
        value, note = rules.max, "; lowered to policy max"
    if bounds.min is not None and value < bounds.min:
        value, note = bounds.min, "; raised to LimitRange min"
    if bounds.max is not None and value > bounds.max:
        value, note = bounds.max, "; lowered to LimitRange max"
    return _round(resource, value, up=True), note


def _bounded_limit(
    resource: str,
    request: Decimal,
    *,
    rules: ResourcePolicy,
    bounds: Bounds,
    profile: ContainerProfile | None,
    policy: Policy,
) -> tuple[Decimal | None, str]:
    if rules.limit is LimitMode.NONE:
        return None, ""
    if rules.limit is LimitMode.EQUAL:
        value, note = request, f'= request, policy "{policy.name}"'
    else:
        value, note = request * rules.limit_ratio, f'{rules.limit_ratio:g} x request, policy "{policy.name}"'
    rec = usable_recommendation(profile, policy)
    if (
        resource == "cpu"
        and policy.startup_cpu_in_limit
        and rec
        and rec.startup_cpu
        and rec.startup_cpu > value
    ):
        value, note = rec.startup_cpu, f"{_STARTUP_PEAK} over {rec.evidence.window}"
    value = _round(resource, value, up=True)
    if bounds.max is not None and value > bounds.max:
        value, note = bounds.max, f"{note}; lowered to LimitRange max"
    if bounds.max_ratio is not None and value > request * bounds.max_ratio:
        value = max(request, _round(resource, request * bounds.max_ratio, up=False))
        note = f"{note}; lowered to LimitRange maxLimitRequestRatio {bounds.max_ratio:g}"
    if bounds.max_ratio is not None and request > 0:
        for _ in range(3):  # LimitRanger divides as floats: at exactly the ratio it may round over it
            if value <= request or not ratio_breached(request, value, bounds.max_ratio):
                break
            value -= _STEP[resource == "cpu"]
    if bounds.min is not None and value < bounds.min:
        value, note = bounds.min, f"{note}; raised to LimitRange min"
    return max(value, request), note
