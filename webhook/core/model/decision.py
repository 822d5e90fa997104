"""What the engine decided for one Pod: patch operations, warnings, and an explanation per value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any, NamedTuple

from webhook.core.model.resourcequota import RoomReading

__all__ = ["POD_TARGET", "Basis", "Cap", "Decision", "Injection", "Note", "PatchOp"]

PatchOp = dict[str, Any]  # one RFC 6902 operation: {"op": ..., "path": ..., "value": ...}
POD_TARGET = "pod"  # the target of pod-level values (the grace period) and of notes about the whole Pod


class Basis(StrEnum):
    """What a value rests on, for metrics and the report (the explanation text says it to people)."""

    HISTORY = "history"  # the workload's usage profile
    POLICY = "policy"  # the namespace policy's defaults
    LIMIT_RANGE = "limitrange"  # moved to a LimitRange bound
    HELD = "held"  # an autoscaler owns the resource: the policy request, not history


class Injection(NamedTuple):
    """One injected value and where it came from, e.g. (app, requests.cpu, 250m, profile p95 over 14d).

    A NamedTuple: as immutable as a frozen dataclass and cheaper to make (a decision makes one per
    injected value).
    """

    target: str  # container name, or POD_TARGET ("pod") for pod-level fields
    field: str  # e.g. "requests.cpu", "readinessProbe", "preStop", "terminationGracePeriodSeconds"
    value: str  # rendered value as a person reads it
    source: str  # why this value
    basis: Basis = Basis.POLICY

    def describe(self) -> str:
        return f"{self.field}={self.value} ({self.source})"


@dataclass(frozen=True, slots=True)
class Note:
    """What pod-tailor deliberately left alone, and to whom (e.g. app: cpu, memory left to vpa web)."""

    target: str  # container name
    text: str
    resources: tuple[str, ...] = ()  # the resources left alone, e.g. ("cpu", "memory")

    def __str__(self) -> str:
        return f"{self.target}: {self.text}"


@dataclass(frozen=True, slots=True)
class Cap:
    """One value a rule lowered (or left unset) so the Pod still runs: for the annotation, the
    warnings and the metrics."""

    rule: str  # "fit" (node fit) | "quota" (ResourceQuota)
    target: str  # container name
    field: str  # "requests.cpu", "limits.memory", ...
    before: str
    after: str | None  # None: pod-tailor's value left out
    reason: str

    def describe(self) -> str:
        resource = self.field.split(".", 1)[1]
        after = "unset" if self.after is None else self.after
        return f"{self.target}: {resource} {self.before} capped to {after}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Decision:
    """The engine's whole answer; `skipped` is set (with a reason) when the Pod was left alone."""

    ops: tuple[PatchOp, ...] = ()
    injections: tuple[Injection, ...] = ()
    warnings: tuple[str, ...] = ()
    skipped: str | None = None
    policy: str = "default"
    workload: str = field(default="")
    notes: tuple[Note, ...] = ()  # in the annotation and the dry-run warnings, not a warning of its own
    caps: tuple[Cap, ...] = ()  # values node fit or quota lowered
    # quota name -> key -> what the Pod counts against it (for the server's ledger of recent Pods)
    charges: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)
    # How the decision read the room its quotas left (None: not at all): when the same decision holds
    room_reading: RoomReading | None = None

    @property
    def changed(self) -> bool:
        return bool(self.ops)
