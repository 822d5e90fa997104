"""ResourceQuota: what a namespace's quotas still allow, which of them count a Pod, and what they require.

Pure. Quota admission refuses a Pod whose requests or limits would take `used` past `hard`, and one
whose containers lack a request or limit a quota tracks. pod-tailor raising requests from history can
cause the first; supplying the value a quota requires can cure the second. `cpu` and `memory` in
`hard` mean `requests.cpu` and `requests.memory`; names pod-tailor never changes (pods, storage,
extended resources, object counts) are ignored. Scopes: `BestEffort`/`NotBestEffort` (judged on the
Pod as it will be created: requests added make a BestEffort Pod NotBestEffort),
`Terminating`/`NotTerminating` (activeDeadlineSeconds), `PriorityClass` (scopes or scopeSelector
against `priorityClassName`); a quota with any other scope (CrossNamespacePodAffinity,
VolumeAttributesClass) is left out with its reason.

The status lags the creates (a ReplicaSet creating 50 Pods sees the same `used` 50 times): `pending`
holds what Pods admitted since, that the status does not show yet, charge each quota (the server's
ledger, `webhook.admission.ledger`, passes it in as a fact).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from webhook.core.model.quantity import QuantityError, parse

__all__ = [
    "KEYS",
    "Band",
    "Quota",
    "RoomReading",
    "applies",
    "left_of",
    "parse_quota",
    "room",
]

# Quota names pod-tailor's values change -> the canonical key.
KEYS = {
    "requests.cpu": "requests.cpu", "cpu": "requests.cpu",
    "requests.memory": "requests.memory", "memory": "requests.memory",
    "limits.cpu": "limits.cpu", "limits.memory": "limits.memory",
}  # fmt: skip
_SCOPES = frozenset({"BestEffort", "NotBestEffort", "Terminating", "NotTerminating", "PriorityClass"})
Expression = tuple[str, str, tuple[str, ...]]  # scopeName, operator, values


@dataclass(frozen=True, slots=True)
class Quota:
    """One ResourceQuota, as far as pod-tailor's values go."""

    name: str
    hard: Mapping[str, Decimal]  # canonical key -> hard
    used: Mapping[str, Decimal]
    scopes: tuple[str, ...] = ()
    selector: tuple[Expression, ...] = ()
    version: str = ""  # the resourceVersion: a new one is a new status
    ignored: str | None = None  # why the quota is left out
    left_out: tuple[str, ...] = field(default=())  # hard names ignored


def _amounts(raw: object, left_out: list[str] | None = None) -> dict[str, Decimal]:
    amounts: dict[str, Decimal] = {}
    for key, value in raw.items() if isinstance(raw, Mapping) else ():
        name = KEYS.get(str(key))
        if name is None:
            if left_out is not None:
                left_out.append(str(key))
            continue
        try:
            amounts[name] = parse(value)
        except QuantityError:
            if left_out is not None:
                left_out.append(f"{key} (unreadable {value!r})")
    return amounts


def parse_quota(obj: Mapping[str, Any]) -> Quota:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    left_out: list[str] = []
    hard = _amounts(spec.get("hard"), left_out)
    scopes = tuple(str(s) for s in spec.get("scopes") or ())
    selector: list[Expression] = []
    for item in ((spec.get("scopeSelector") or {}).get("matchExpressions") or ()):
        if isinstance(item, Mapping):
            values = tuple(str(v) for v in item.get("values") or ())
            selector.append((str(item.get("scopeName")), str(item.get("operator")), values))
    named = {*scopes, *(expression[0] for expression in selector)}
    unknown = sorted(named - _SCOPES)
    ignored = f"scope {', '.join(unknown)} not judged by pod-tailor" if unknown else None
    return Quota(
        name=str(meta.get("name") or ""),
        hard=hard,
        used=_amounts(status.get("used")),
        scopes=scopes,
        selector=tuple(selector),
        version=str(meta.get("resourceVersion") or ""),
        ignored=ignored,
        left_out=tuple(left_out),
    )


def _best_effort(pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    for group in ("initContainers", "containers"):
        for body in spec.get(group) or ():
            resources = body.get("resources") or {}
            for section in ("requests", "limits"):
                values = resources.get(section) or {}
                if any(r in values for r in ("cpu", "memory")):
                    return False
    return not any(r in ((spec.get("resources") or {}).get(section) or {})
                   for section in ("requests", "limits") for r in ("cpu", "memory"))  # fmt: skip


def _scope_holds(scope: str, operator: str, values: Sequence[str], pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    if scope == "BestEffort":
        return _best_effort(pod)
    if scope == "NotBestEffort":
        return not _best_effort(pod)
    deadline = spec.get("activeDeadlineSeconds")
    if scope == "Terminating":
        return isinstance(deadline, int) and deadline >= 0
    if scope == "NotTerminating":
        return not (isinstance(deadline, int) and deadline >= 0)
    if scope == "PriorityClass":
        name = spec.get("priorityClassName")
        if operator == "In":
            return name in values
        if operator == "NotIn":
            return name not in values  # an unset priorityClassName is "not in"
        if operator == "DoesNotExist":
            return not name
        return bool(name)  # Exists, and the plain scope
    return False


def applies(quota: Quota, pod: Mapping[str, Any]) -> bool:
    """Whether `quota` counts `pod` (as it will be created); a quota left out counts nothing."""
    if quota.ignored is not None:
        return False
    if not all(_scope_holds(scope, "Exists", (), pod) for scope in quota.scopes):
        return False
    return all(_scope_holds(scope, op, values, pod) for scope, op, values in quota.selector)


def left_of(quota: Quota, charged: Mapping[str, Decimal] | None = None) -> dict[str, Decimal]:
    """Canonical key -> what `quota` has left of it: `hard - used - charged` (`charged`: what Pods
    admitted since its status charge it). A quota whose status is not written yet counts nothing used."""
    used = quota.used
    left = {key: hard - used[key] if key in used else hard for key, hard in quota.hard.items()}
    if charged:
        for key, amount in charged.items():
            if key in left:
                left[key] -= amount
    return left


def room(
    quotas: Iterable[Quota], pending: Mapping[str, Mapping[str, Decimal]] | None = None
) -> dict[str, tuple[Decimal, str]]:
    """Canonical key -> (the least any of `quotas` has left of it (`left_of`, with its `pending`
    charges), that quota's name; the first of them on a tie); a key no quota tracks is absent."""
    least: dict[str, tuple[Decimal, str]] = {}
    for quota in quotas:
        for key, amount in left_of(quota, pending.get(quota.name) if pending else None).items():
            if key not in least or amount < least[key][0]:
                least[key] = (amount, quota.name)
    return least


@dataclass(frozen=True, slots=True)
class Band:
    """The rooms of one key (`room`) for which a decision comes out the same: `low <= room <= high`
    (None: unbounded), and where the decision named the tightest quota, that quota still the tightest."""

    low: Decimal | None = None
    high: Decimal | None = None
    name: str | None = None

    def holds(self, left: Decimal, name: str) -> bool:
        return (
            (self.low is None or left >= self.low)
            and (self.high is None or left <= self.high)
            and (self.name is None or name == self.name)
        )


@dataclass(frozen=True, slots=True)
class RoomReading:
    """How a decision read the room its namespace's quotas left (`room` over the quotas `counted`),
    so a replica decided against other Pods' pending charges can reuse it: per key, the band of rooms
    that give the same decision. The verdict cache checks it instead of deciding again."""

    counted: tuple[str, ...]  # the quotas that counted the Pod, by name
    bands: Mapping[str, Band]  # canonical key -> band; every key `room` gives

    def holds(self, quotas: Sequence[Quota], pending: Mapping[str, Mapping[str, Decimal]] | None) -> bool:
        """Whether `quotas` (the namespace's, as the decision saw them) and `pending` give a room in
        every band, so deciding again would give the same decision."""
        counted = self.counted
        rooms = room((quota for quota in quotas if quota.name in counted), pending)
        if len(rooms) != len(self.bands):
            return False
        for key, band in self.bands.items():
            left = rooms.get(key)
            if left is None or not band.holds(*left):
                return False
        return True
