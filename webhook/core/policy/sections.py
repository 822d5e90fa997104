"""The policy's smaller sections: `autoscalers` (and its `steps`), `startupBoost`, `fit` and `quota`.

Each is a frozen dataclass and the function that reads it from the policy document with a `Reader`
(`webhook.core.policy.reader`); the rules that act on them live with their concern: the autoscaler
holds and the step limit in `core/sizing/`, the boost in `core/boost/`, node fit and quota in
`core/fit/`.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

from webhook.core.policy.reader import Reader

__all__ = [
    "AutoscalerPolicy",
    "BoostPolicy",
    "BoostSource",
    "BoostUntil",
    "FitPolicy",
    "HpaUtilization",
    "QuotaPolicy",
    "StepLimit",
    "VpaMode",
    "autoscaler_policy",
    "boost_policy",
    "fit_policy",
    "quota_policy",
    "step_limit",
]


@dataclass(frozen=True, slots=True)
class StepLimit:
    """How far a recommendation may move from the one served before, per day."""

    down_per_day: Decimal  # fraction it may fall a day: 0.3 = 30 %; 1 = unbounded
    up_per_day: Decimal | None  # fraction it may rise a day; None = unbounded


def step_limit(reader: Reader) -> StepLimit:
    """`autoscalers.steps` of a policy: `{downPerDay: 0..1, upPerDay: null | 0..100}`."""
    reader.only("downPerDay", "upPerDay")
    up = None if reader.data.get("upPerDay") is None else reader.number("upPerDay", low=0, high=100)
    return StepLimit(down_per_day=reader.number("downPerDay", low=0, high=1), up_per_day=up)


class HpaUtilization(StrEnum):
    KEEP = "keep"  # a resource an HPA scales on by Utilization is not sized from history
    SIZE = "size"  # sized from history anyway (the feedback loop is yours)


class VpaMode(StrEnum):
    DEFER = "defer"  # resources a VPA sets at admission are left to it
    IGNORE = "ignore"  # sized as if there were no VPA


@dataclass(frozen=True, slots=True)
class AutoscalerPolicy:
    """`autoscalers`: the HPA and VPA rule (`webhook.core.sizing.holds`) and the daily step limit."""

    hpa_utilization: HpaUtilization
    vpa: VpaMode
    steps: StepLimit


def autoscaler_policy(reader: Reader) -> AutoscalerPolicy:
    """The policy's `autoscalers` section: `{hpaUtilization: keep|size, vpa: defer|ignore, steps: ...}`."""
    reader.only("hpaUtilization", "vpa", "steps")
    return AutoscalerPolicy(
        hpa_utilization=reader.choice("hpaUtilization", HpaUtilization),
        vpa=reader.choice("vpa", VpaMode),
        steps=step_limit(reader.child("steps")),
    )


class BoostSource(StrEnum):
    PROFILE = "profile"  # the start-up CPU peak from history
    FACTOR = "factor"  # request x factor, for every container pod-tailor sizes


class BoostUntil(StrEnum):
    READY = "ready"  # Ready + extraSeconds
    DURATION = "duration"  # extraSeconds after the start


@dataclass(frozen=True, slots=True)
class BoostPolicy:
    """The policy's `startupBoost` section (off by default)."""

    enabled: bool = False
    source: BoostSource = BoostSource.PROFILE
    factor: Decimal = Decimal(2)
    max: Decimal = Decimal(4)  # cores: what the scheduler may reserve for one container's start
    until: BoostUntil = BoostUntil.READY
    extra_seconds: int = 30
    max_seconds: int = 600
    hpa_utilization: bool = False  # boost cpu an HPA scales on by utilization (halves its view at start)


def boost_policy(reader: Reader) -> BoostPolicy:
    reader.only("enabled", "source", "factor", "max", "until", "extraSeconds", "maxSeconds", "hpaUtilization")
    return BoostPolicy(
        enabled=reader.boolean("enabled"),
        source=reader.choice("source", BoostSource),
        factor=reader.number("factor", low=1, high=64),
        max=reader.quantity("max"),
        until=reader.choice("until", BoostUntil),
        extra_seconds=reader.integer("extraSeconds", high=3600),
        max_seconds=reader.integer("maxSeconds", low=1, high=86_400),
        hpa_utilization=reader.boolean("hpaUtilization"),
    )


@dataclass(frozen=True, slots=True)
class FitPolicy:
    """`fit`: whether to hold requests to the nodes, and the largest node an autoscaler could add."""

    enabled: bool = True
    max_node_cpu: Decimal | None = None
    max_node_memory: Decimal | None = None


def fit_policy(reader: Reader) -> FitPolicy:
    reader.only("enabled", "maxNode")
    raw = reader.data.get("maxNode")
    cpu = memory = None
    if raw is not None:
        node = reader.child("maxNode").only("cpu", "memory")
        cpu, memory = node.quantity("cpu"), node.quantity("memory")
    return FitPolicy(enabled=reader.boolean("enabled"), max_node_cpu=cpu, max_node_memory=memory)


@dataclass(frozen=True, slots=True)
class QuotaPolicy:
    """`quota`: hold injected values within the quotas, and supply what a quota requires."""

    respect: bool = True
    supply_required: bool = True


def quota_policy(reader: Reader) -> QuotaPolicy:
    reader.only("respect", "supplyRequired")
    return QuotaPolicy(respect=reader.boolean("respect"), supply_required=reader.boolean("supplyRequired"))
