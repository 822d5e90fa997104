"""Quota at admission: supply what a quota requires, fall back where an injected value does not fit (pure).

Per resource pod-tailor adds, against the quotas that count the Pod (`webhook.core.model.resourcequota`):
1. A quota tracking `requests.x` or `limits.x` refuses a Pod whose containers lack that value; with
   `quota.supplyRequired` the policy's request (and, for a limit, the container's request) is
   supplied, so the Pod is admitted.
2. Injected values that would take the namespace past `hard` (status `used` plus the Pods admitted
   since that the status does not show yet) come down, in proportion, to the policy minimum; when
   even that is too much, pod-tailor's values are left out (the Pod as its author wrote it).
`charges` is what the Pod will count against each quota, for the ledger.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from webhook.core.fit.caps import CreatedTotals, as_created, lower, totals, unset
from webhook.core.model.decision import Basis, Cap, Injection
from webhook.core.model.limitrange import LimitRangeItem
from webhook.core.model.patch import PatchBuilder
from webhook.core.model.pod import ContainerRef
from webhook.core.model.quantity import parse_or_none, render
from webhook.core.model.resourcequota import Band, Quota, RoomReading, applies, room
from webhook.core.policy.policies import Policy

__all__ = ["QuotaOutcome", "charges", "quota_pod"]

_ORDER = ("requests.cpu", "requests.memory", "limits.cpu", "limits.memory")
_ZERO = Decimal(0)


@dataclass(frozen=True, slots=True)
class QuotaOutcome:
    caps: tuple[Cap, ...] = ()
    warnings: tuple[str, ...] = ()
    room: Mapping[str, Decimal] = field(default_factory=dict)  # key -> what the Pod may still add
    reading: RoomReading | None = None  # how the outcome depends on the room (None: it does not)


def _supply(
    values: Mapping[str, Mapping[str, Any]], key: str, *, policy: Policy, quota: str
) -> tuple[str, str] | None:
    """(value, why) for the `key` a container with `values` (`_created_values`) lacks, or None when
    it has it or the policy has none."""
    section, resource = key.split(".", 1)
    if resource not in policy.resources or resource in values[section]:
        return None
    request = parse_or_none(values["requests"].get(resource))
    limit = parse_or_none(values["limits"].get(resource))
    if section == "requests":
        amount = policy.resources[resource].request
        amount = amount if limit is None else min(amount, limit)
        why = f"required by ResourceQuota {quota}: policy request"
    else:
        amount = request if request is not None else policy.resources[resource].request
        why = f"required by ResourceQuota {quota}: = request"
    return render(resource, amount), why


def _created_values(ref: ContainerRef, injections: Sequence[Injection]) -> dict[str, dict[str, Any]]:
    """The container's requests and limits as it will be created: its own, the injected ones over them
    (what `as_created` gives it, without a copy of the Pod)."""
    resources = ref.body.get("resources") or {}
    values: dict[str, dict[str, Any]] = {
        section: dict(resources.get(section) or {}) for section in ("requests", "limits")
    }
    for injection in injections:
        if injection.target == ref.name and injection.field.startswith(("requests.", "limits.")):
            section, resource = injection.field.split(".", 1)
            values[section][resource] = injection.value
    return values


def _counting(
    pod: Mapping[str, Any], quotas: Sequence[Quota], injections: Sequence[Injection]
) -> list[Quota]:
    """The quotas that count the Pod as it will be created (only a scoped quota reads the Pod)."""
    if not any(quota.scopes or quota.selector for quota in quotas):
        return [quota for quota in quotas if quota.ignored is None]
    created = as_created(pod, injections)
    return [quota for quota in quotas if applies(quota, created)]


def quota_pod(
    pod: Mapping[str, Any],
    *,
    policy: Policy,
    quotas: Sequence[Quota],
    pending: Mapping[str, Mapping[str, Decimal]],
    limit_ranges: Sequence[LimitRangeItem],
    sizeable: Sequence[ContainerRef],
    injections: list[Injection],
    patch: PatchBuilder,
    boost_reads_room: bool = False,
    totals_of: CreatedTotals | None = None,
) -> QuotaOutcome:
    """Supply and fall back as the module docstring says; `injections` updated in place.

    The outcome's `reading` holds, per key, the rooms that give this same outcome (`RoomReading`):
    a value that fits keeps fitting in any larger room; a fallback to the author's values when
    nothing is left (every value of ours at its floor) stays the same in any smaller room; else the
    room itself. `boost_reads_room`: the start-up boost will read the cpu room this returns, so those
    keys' bands are the room itself. `totals_of`: the decision's totals of the Pod as created.
    """
    if not policy.quota.respect or not quotas:
        return QuotaOutcome()
    totals_of = totals_of if totals_of is not None else CreatedTotals(pod)
    counting = _counting(pod, quotas, injections)
    if policy.quota.supply_required and _supply_required(
        counting, policy=policy, sizeable=sizeable, injections=injections, patch=patch
    ):
        counting = _counting(pod, quotas, injections)
    left = room(counting, pending)
    fallback = _fall_back(
        pod, left, policy=policy, limit_ranges=limit_ranges, injections=injections, patch=patch,
        totals_of=totals_of,
    )
    bands = fallback.bands
    if boost_reads_room:
        for key in ("requests.cpu", "limits.cpu"):
            if key in left:
                bands[key] = Band(low=left[key][0], high=left[key][0], name=bands[key].name)
    after = fallback.after
    return QuotaOutcome(
        fallback.caps, fallback.warnings,
        {key: max(amount - after.get(key, _ZERO), _ZERO) for key, (amount, _) in left.items()},
        RoomReading(tuple(quota.name for quota in counting), bands) if bands else None,
    )


def _supply_required(
    counting: Sequence[Quota],
    *,
    policy: Policy,
    sizeable: Sequence[ContainerRef],
    injections: list[Injection],
    patch: PatchBuilder,
) -> bool:
    """Supply each value a quota that counts the Pod tracks and a container lacks (`_supply`); whether
    any was (the Pod's scopes may then read differently)."""
    before = len(injections)
    created_values: dict[str, dict[str, dict[str, Any]]] = {}  # container -> as it will be created
    for quota in counting:
        for key in _ORDER:
            if key not in quota.hard:
                continue
            for ref in sizeable:
                values = created_values.get(ref.name)
                if values is None:
                    values = created_values[ref.name] = _created_values(ref, injections)
                supplied = _supply(values, key, policy=policy, quota=quota.name)
                if supplied is not None:
                    value, why = supplied
                    section, resource = key.split(".", 1)
                    patch.set((*ref.path, "resources", section, resource), value)
                    injections.append(Injection(ref.name, key, value, why, Basis.POLICY))
                    values[section][resource] = value
    return len(injections) != before


@dataclass(frozen=True, slots=True)
class _Fallback:
    caps: tuple[Cap, ...]
    warnings: tuple[str, ...]
    bands: dict[str, Band]  # key -> the rooms that give this same outcome
    after: Mapping[str, Decimal]  # the Pod's totals as created, after the fallback


def _fall_back(
    pod: Mapping[str, Any],
    left: Mapping[str, tuple[Decimal, str]],
    *,
    policy: Policy,
    limit_ranges: Sequence[LimitRangeItem],
    injections: list[Injection],
    patch: PatchBuilder,
    totals_of: CreatedTotals,
) -> _Fallback:
    """Per key a quota tracks, in `_ORDER`: what pod-tailor added comes down (`lower`) to fit what
    the tightest quota has `left`, or out (`unset`) when even the floors do not fit."""
    caps: list[Cap] = []
    warnings: list[str] = []
    bands: dict[str, Band] = {}
    now = totals_of.of(injections)
    for key in _ORDER:
        if key not in left:
            continue
        allowed, name = left[key]
        used = now.get(key, _ZERO)
        if used <= allowed:
            bands[key] = Band(low=used)
            continue
        resource = key.split(".", 1)[1]
        reason = f"ResourceQuota {name} has {render(resource, max(allowed, Decimal(0)))} of {key} left"
        floor = policy.resources[resource].min if resource in policy.resources else Decimal(0)
        done = lower(
            pod, field=key, excess=used - allowed, floor=floor, injections=injections, patch=patch,
            limit_ranges=limit_ranges, rule="quota", reason=reason,
        )
        caps += done.caps
        # Full, with every value of ours at its floor: a smaller room ends the same way ("0 left").
        full = done.short > 0 and done.saturated and allowed <= 0
        bands[key] = Band(high=allowed, name=name) if full else Band(low=allowed, high=allowed, name=name)
        if done.short > 0:
            caps = [cap for cap in caps if cap.field != key]
            caps += unset(pod, field=key, injections=injections, patch=patch, rule="quota", reason=reason)
            warnings.append(
                f"ResourceQuota {name} is full for {key} ({render(resource, max(allowed, Decimal(0)))} "
                "left): pod-tailor's values left out"
            )
        now = totals_of.of(injections)
    return _Fallback(tuple(caps), tuple(warnings), bands, now)


def charges(
    pod: Mapping[str, Any],
    injections: Sequence[Injection],
    quotas: Sequence[Quota],
    *,
    used: Callable[[], Mapping[str, Decimal]] | None = None,
) -> dict[str, dict[str, Decimal]]:
    """What `pod` with `injections` (the Pod as it will be) counts against each quota that counts it;
    `used`: where its totals are known already (asked only when a quota counts the Pod)."""
    counting = _counting(pod, quotas, injections)
    if not counting:
        return {}
    amounts = totals(as_created(pod, injections)) if used is None else used()
    return {q.name: {key: amounts.get(key, _ZERO) for key in q.hard} for q in counting}
