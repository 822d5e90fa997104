"""Per-workload, per-container usage profiles: a recommendation with its evidence, or a reason for none."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from webhook.core.model.workload import WorkloadKey

__all__ = [
    "ContainerProfile",
    "Evidence",
    "NoRecommendation",
    "ProfileIndex",
    "Recommendation",
    "TrailPoint",
    "UsageTotals",
    "WorkloadProfiles",
]


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a recommendation rests on, so the injected annotation can explain the number."""

    window: str  # the query window as Prometheus reads it, e.g. "14d"
    samples: int  # usage points seen for this container
    hours: float  # span of history actually covered
    cpu_percentile: float  # e.g. 95.0
    memory_margin: float  # e.g. 0.15 for +15 % over the peak
    confidence: float  # 0..1, grows with hours and samples
    oom_kills: int = 0
    # Which CPU statistic the request is (`pooled`: the percentile of every Pod's points together;
    # `maxPerPod`: the largest Pod's own percentile), read at what resolution, and its value before
    # rounding (cores) with how close to exact it is (relative; 0.005 = within 0.5 %).
    cpu_aggregate: str = "pooled"
    cpu_step: str = ""
    cpu_rate_window: str = ""
    cpu_value: float | None = None
    cpu_within: float | None = None
    memory_peak: float | None = None  # bytes: the peak working set the memory request adds the margin to


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """The peak of one container's usage summed over all Pods of its workload (cores, bytes).

    What an HPA's headroom is judged against: per-Pod history says nothing about how much the
    workload as a whole needed at its busiest.
    """

    cpu: Decimal | None = None
    memory: Decimal | None = None


@dataclass(frozen=True, slots=True)
class TrailPoint:
    """What an earlier build recommended (for the step limit, `webhook.core.sizing.steady`)."""

    at: float  # the build's time (unix s)
    cpu: Decimal
    memory: Decimal
    oom: bool = False  # that build had seen an OOM kill


@dataclass(frozen=True, slots=True)
class Recommendation:
    """Requests sized from history: cpu in cores, memory in bytes (both Decimal)."""

    cpu: Decimal
    memory: Decimal
    evidence: Evidence
    startup_cpu: Decimal | None = None  # peak cores in the first minutes of a container's life
    startup_seconds: float | None = None  # how long the start-up phase lasted
    totals: UsageTotals | None = None  # the workload's peak total usage of this container
    built_at: float | None = None  # when this recommendation was built (unix s); None: unknown
    trail: tuple[TrailPoint, ...] = ()  # earlier builds' recommendations, oldest first, one a day
    # Other CPU statistics the build counted, for the policies that name them (`core.statistic`):
    # key `<percentile>/<aggregate>/<rate window>` -> cores, rounded as `cpu` is.
    cpu_by: Mapping[str, Decimal] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NoRecommendation:
    """History too thin or missing: the engine falls back to the policy and says why."""

    reason: str


ContainerProfile = Recommendation | NoRecommendation
WorkloadProfiles = Mapping[str, ContainerProfile]  # container name -> profile
ProfileIndex = Mapping[WorkloadKey, WorkloadProfiles]
