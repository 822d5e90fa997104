"""What to answer for a Pod, given its namespace mode and the engine's decision.

A `Verdict` holds everything in the answer that does not depend on the request's uid or `dryRun`, so
Pods with the same template (every replica of a ReplicaSet) can share one; see `VerdictCache`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum

from webhook.admission.budget import fit_audit, fit_warnings
from webhook.admission.response import answer_tail, encode_patch
from webhook.core.model.decision import Basis, Decision, Injection
from webhook.core.model.namespace import Mode, NamespaceSettings
from webhook.core.model.resourcequota import RoomReading

__all__ = ["Outcome", "Verdict", "source_kind", "verdict"]


class Outcome(StrEnum):
    PATCHED = "patched"  # enforce: a patch was returned
    UNCHANGED = "unchanged"  # enforce: nothing to add
    DRY_RUN = "dry-run"  # namespace in dry-run mode: warnings say what would change
    OFF = "off"  # namespace mode off
    SKIPPED = "skipped"  # the engine left the Pod alone (opt-out label, excluded, ...)
    IGNORED = "ignored"  # not a Pod CREATE: another kind, operation or a subresource
    BAD_REQUEST = "bad-request"  # 400
    TOO_LARGE = "too-large"  # 413
    ERROR = "error"  # our fault: allowed unchanged, with a warning
    SHED = "shed"  # overloaded or past the request's deadline: allowed unchanged, with a warning


@dataclass(frozen=True, slots=True)
class Verdict:
    outcome: Outcome
    patch: str | None = None  # base64 JSON Patch, only for PATCHED
    warnings: tuple[str, ...] = ()
    audit: Mapping[str, str] = field(default_factory=dict)
    injections: tuple[Injection, ...] = ()
    workload: str | None = None
    policy: str | None = None
    capped: tuple[str, ...] = ()  # the rules that lowered a value ("fit", "quota"), for metrics
    charges: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)  # Decision.charges
    room_reading: RoomReading | None = None  # Decision.room_reading: when a replica may reuse this
    # Derived once per verdict (a cached verdict answers every replica of a template):
    # (field kind, source kind, count), for metrics
    injection_counts: tuple[tuple[str, str, int], ...] = field(init=False)
    tail: bytes = field(init=False)  # the answer after the uid; see `response.answer_with_tail`

    def __post_init__(self) -> None:
        counts: dict[tuple[str, str], int] = {}
        for item in self.injections:  # a loop, not a Counter: this runs for every decided Pod
            key = (_field_kind(item.field), source_kind(item))
            counts[key] = counts.get(key, 0) + 1
        object.__setattr__(self, "injection_counts", tuple(sorted((*key, n) for key, n in counts.items())))
        tail = answer_tail(patch=self.patch, warnings=self.warnings, audit=self.audit)
        object.__setattr__(self, "tail", tail)


def _field_kind(name: str) -> str:
    """Bounded metric label values: `requests.cpu`, `readinessProbe`, ... (no container names)."""
    return name.split(" ", 1)[0][:64]


def source_kind(injection: Injection) -> str:
    """Bounded metric label values: `profile` for values sized from usage history, else `policy`."""
    return "profile" if injection.basis is Basis.HISTORY else "policy"


def _capped(decision: Decision) -> tuple[str, ...]:
    return tuple(sorted({cap.rule for cap in decision.caps})) if decision.caps else ()


def _would(decision: Decision) -> list[str]:
    return [f"{item.target}: {item.describe()}" for item in decision.injections]


def verdict(settings: NamespaceSettings, decision: Decision) -> Verdict:
    """Map the mode and the decision to an answer; enforce gives the same patch with or without dryRun."""
    workload, policy = decision.workload or None, decision.policy
    notes = [w if w.startswith("pod-tailor") else f"pod-tailor: {w}" for w in decision.warnings]
    if settings.mode is Mode.OFF:
        return Verdict(Outcome.OFF, workload=workload, policy=policy)
    if decision.skipped is not None:
        return Verdict(Outcome.SKIPPED, warnings=fit_warnings(notes), workload=workload, policy=policy,
                       room_reading=decision.room_reading)
    if settings.mode is Mode.DRY_RUN:
        would = _would(decision)
        head = (
            f"pod-tailor dry-run ({decision.policy} policy): {len(would)} value(s) would be injected"
            if would
            else f"pod-tailor dry-run ({decision.policy} policy): nothing would be injected"
        )
        left = [f"pod-tailor left {note}" for note in decision.notes]  # "app: cpu left to vpa web (Auto)"
        warnings = fit_warnings([head, *notes, *(f"pod-tailor would set {w}" for w in would), *left])
        audit = fit_audit(
            {
                "mode": "dry-run",
                "policy": decision.policy,
                "would-inject": would,
                "left": [str(note) for note in decision.notes],
            }
        )
        return Verdict(
            Outcome.DRY_RUN,
            warnings=warnings,
            audit=audit,
            injections=decision.injections,
            workload=workload,
            policy=policy,
            capped=_capped(decision),
            charges=decision.charges,
            room_reading=decision.room_reading,
        )
    if not decision.ops:
        return Verdict(Outcome.UNCHANGED, warnings=fit_warnings(notes), workload=workload, policy=policy,
                       capped=_capped(decision), charges=decision.charges,
                       room_reading=decision.room_reading)
    audit = fit_audit({"mode": "enforce", "policy": decision.policy, "injected": _would(decision)})
    return Verdict(
        Outcome.PATCHED,
        patch=encode_patch(decision.ops),
        warnings=fit_warnings(notes),
        audit=audit,
        injections=decision.injections,
        workload=workload,
        policy=policy,
        capped=_capped(decision),
        charges=decision.charges,
        room_reading=decision.room_reading,
    )
