"""Which usage statistic a policy sizes requests from: the policy's `profiles.cpu` and `profiles.memory`.

`profiles.cpu.percentile` (95), `.aggregate` (`pooled`: every Pod's points together, VPA-like;
`maxPerPod`: the largest Pod's own percentile, KRR-like) and `.rateWindow` (`auto`: two scrape
intervals, the shortest valid; or a duration) name the CPU statistic the build counts exactly (the
build computes every statistic the policies name: `profiles build --policy-file`);
`profiles.memory.margin` (0.15) is the headroom over the peak working set. A workload may choose its
own CPU percentile (annotation `pod-tailor.io/cpu-percentile`) among `profiles.cpu.percentiles`,
which the build also counts, and its memory margin (`pod-tailor.io/memory-margin`) inside
`profiles.memory.marginRange`; anything else in those annotations is ignored with a note.

Pure: a stored recommendation and the policy's choice in, the recommendation to use out.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal

from webhook.core.model.profile import ContainerProfile, Recommendation
from webhook.core.policy.reader import PolicyError, Reader

__all__ = [
    "CPU_PERCENTILE_ANNOTATION",
    "MEMORY_MARGIN_ANNOTATION",
    "CpuStatistic",
    "UsageStatistic",
    "for_workload",
    "usage_statistic",
]

CPU_PERCENTILE_ANNOTATION = "pod-tailor.io/cpu-percentile"
MEMORY_MARGIN_ANNOTATION = "pod-tailor.io/memory-margin"
AGGREGATES = ("pooled", "maxPerPod")
_DURATION = re.compile(r"^\d+[smhd]$")
_MIB = Decimal(2**20)


@dataclass(frozen=True, slots=True, order=True)
class CpuStatistic:
    """One CPU statistic a build counts: `key` names it in the store (`95/pooled/auto`)."""

    percentile: float = 95.0
    aggregate: str = "pooled"
    rate_window: str = "auto"

    @property
    def key(self) -> str:
        return f"{self.percentile:g}/{self.aggregate}/{self.rate_window}"


@dataclass(frozen=True, slots=True)
class UsageStatistic:
    """A policy's `profiles.cpu` / `profiles.memory` choices; None: what the store holds (the build's
    own settings), so a policy that says nothing never asks for a statistic no build counted."""

    cpu: CpuStatistic | None = None
    percentiles: tuple[float, ...] = ()  # further CPU percentiles a workload's annotation may choose
    memory_margin: Decimal | None = None
    margin_range: tuple[Decimal, Decimal] | None = None  # what a workload's annotation may choose

    def statistics(self) -> set[CpuStatistic]:
        """Every CPU statistic this policy may use (what a build counts for it)."""
        base = self.cpu or CpuStatistic()
        return ({self.cpu} if self.cpu else set()) | {dataclasses.replace(base, percentile=p)
                                                      for p in self.percentiles}


def usage_statistic(reader: Reader) -> UsageStatistic:
    """The policy's `profiles.cpu` and `profiles.memory` (each optional: the defaults above)."""
    cpu = reader.child("cpu").only("percentile", "aggregate", "rateWindow", "percentiles") \
        if "cpu" in reader.data else None
    memory = reader.child("memory").only("margin", "marginRange") if "memory" in reader.data else None
    statistic: CpuStatistic | None = None
    percentiles: tuple[float, ...] = ()
    if cpu is not None:
        default = CpuStatistic()
        percentile = float(cpu.number("percentile", low=1, high=100)) if "percentile" in cpu.data \
            else default.percentile
        aggregate = cpu.data.get("aggregate", default.aggregate)
        if aggregate not in AGGREGATES:
            raise PolicyError(f"{cpu.path}.aggregate: must be one of {', '.join(AGGREGATES)}, "
                              f"got {aggregate!r}")
        window = cpu.data.get("rateWindow", default.rate_window)
        if not isinstance(window, str) or not (window == "auto" or _DURATION.match(window)):
            raise PolicyError(f"{cpu.path}.rateWindow: must be auto or a duration such as 5m, got {window!r}")
        listed = cpu.data.get("percentiles", [])
        if not isinstance(listed, list) or not all(
            isinstance(p, int | float) and not isinstance(p, bool) and 1 <= p <= 100 for p in listed
        ):
            raise PolicyError(f"{cpu.path}.percentiles: must be a list of numbers from 1 to 100, "
                              f"got {listed!r}")
        if any(key in cpu.data for key in ("percentile", "aggregate", "rateWindow")):
            statistic = CpuStatistic(percentile, aggregate, window)
        percentiles = tuple(sorted({float(p) for p in listed} - {percentile}))
    margin: Decimal | None = None
    margin_range: tuple[Decimal, Decimal] | None = None
    if memory is not None:
        if "margin" in memory.data:
            margin = memory.number("margin", low=0, high=10)
        bounds = memory.data.get("marginRange")
        if bounds is not None:
            numbers = isinstance(bounds, list) and len(bounds) == 2 and all(
                isinstance(b, int | float) and not isinstance(b, bool) and 0 <= b <= 10 for b in bounds)
            low, high = (Decimal(str(b)) for b in bounds) if numbers else (Decimal(1), Decimal(0))
            if not numbers or not low <= (margin if margin is not None else low) <= high:
                raise PolicyError(f"{memory.path}.marginRange: must be [low, high] around margin, "
                                  f"got {bounds!r}")
            margin_range = (low, high)
    return UsageStatistic(statistic, percentiles, margin, margin_range)


def _number(text: str | None) -> Decimal | None:
    try:
        return Decimal(text.strip()) if text is not None else None
    except (ArithmeticError, ValueError):
        return None


def for_workload(
    profiles: Mapping[str, ContainerProfile], usage: UsageStatistic, annotations: Mapping[str, str]
) -> tuple[dict[str, ContainerProfile], list[str]]:
    """The workload's profiles sized by the policy's statistic (and the workload's annotations within
    its bounds), with notes for what could not be honoured."""
    notes: list[str] = []
    cpu, margin = usage.cpu, usage.memory_margin
    wanted = _number(annotations.get(CPU_PERCENTILE_ANNOTATION))
    if wanted is not None:
        allowed = sorted({*usage.percentiles, *([cpu.percentile] if cpu else [])})
        if float(wanted) in allowed:
            cpu = dataclasses.replace(cpu or CpuStatistic(), percentile=float(wanted))
        else:
            listed = ", ".join(f"{p:g}" for p in allowed) or "none"
            notes.append(f"{CPU_PERCENTILE_ANNOTATION} {wanted} ignored: the policy allows {listed}")
    elif CPU_PERCENTILE_ANNOTATION in annotations:
        notes.append(f"{CPU_PERCENTILE_ANNOTATION} ignored: not a number")
    asked = _number(annotations.get(MEMORY_MARGIN_ANNOTATION))
    if asked is not None:
        if usage.margin_range and usage.margin_range[0] <= asked <= usage.margin_range[1]:
            margin = asked
        else:
            low, high = usage.margin_range or ("-", "-")
            notes.append(f"{MEMORY_MARGIN_ANNOTATION} {asked} ignored: the policy allows {low} to {high}")
    elif MEMORY_MARGIN_ANNOTATION in annotations:
        notes.append(f"{MEMORY_MARGIN_ANNOTATION} ignored: not a number")
    if cpu is None and margin is None:
        return dict(profiles), notes
    out: dict[str, ContainerProfile] = {}
    for name, profile in profiles.items():
        if not isinstance(profile, Recommendation):
            out[name] = profile
            continue
        sized, note = _sized(profile, cpu, margin)
        out[name] = sized
        if note:
            notes.append(f"{name}: {note}")
    return out, notes


def _sized(
    profile: Recommendation, cpu: CpuStatistic | None, margin: Decimal | None
) -> tuple[Recommendation, str]:
    """`profile` with the CPU request of statistic `cpu` and the memory request at `margin` (None:
    as stored)."""
    evidence, note = profile.evidence, ""
    value = profile.cpu
    stored = CpuStatistic(evidence.cpu_percentile, evidence.cpu_aggregate, cpu.rate_window if cpu else "")
    if cpu is not None and stored != cpu:
        counted = profile.cpu_by.get(cpu.key)
        if counted is None:
            note = (f"no {cpu.key} CPU statistic in the store (the build counts those the policies "
                    f"name): {stored.key}")
        else:
            value = counted
            evidence = dataclasses.replace(evidence, cpu_percentile=cpu.percentile,
                                           cpu_aggregate=cpu.aggregate, cpu_value=None, cpu_within=None)
    memory = profile.memory
    changed = margin is not None and Decimal(str(evidence.memory_margin)) != margin
    if margin is not None and evidence.memory_peak is not None and changed and not evidence.oom_kills:
        need = Decimal(str(evidence.memory_peak)) * (1 + margin)  # (after an OOM kill the peak is the limit)
        memory = max((need / _MIB).to_integral_value(rounding=ROUND_CEILING) * _MIB, 16 * _MIB)
        evidence = dataclasses.replace(evidence, memory_margin=float(margin))
    if value == profile.cpu and memory == profile.memory and evidence is profile.evidence:
        return profile, note
    return dataclasses.replace(profile, cpu=value, memory=memory, evidence=evidence), note
