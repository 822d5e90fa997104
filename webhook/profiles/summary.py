"""A drawable summary of one container's usage: its distribution and its day, kept beside its profile.

The report and the dashboard plot usage against today's and the recommended request and limit from
this alone, without asking Prometheus. It is small on purpose (a few hundred bytes in the store, so a
namespace's ConfigMap stays far below 1 MiB): five quantiles of cpu and memory and a 24-point curve of
each by hour of day (UTC). The engine never reads it; a store without summaries loads all the same.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from webhook.core.model.quantity import QuantityError, parse, render_bytes, render_cpu

__all__ = ["HOURS", "QUANTILES", "UsageSummary", "decode_summaries", "decode_summary", "encode_summary"]

QUANTILES = ("p50", "p90", "p95", "p99", "max")
HOURS = 24


@dataclass(frozen=True, slots=True)
class UsageSummary:
    """cpu in cores, memory in bytes; an hour without data is None."""

    cpu: Mapping[str, float] = field(default_factory=dict)  # QUANTILES name -> cores
    memory: Mapping[str, float] = field(default_factory=dict)  # -> bytes
    cpu_by_hour: Sequence[float | None] = ()  # HOURS values, hour of day in UTC
    memory_by_hour: Sequence[float | None] = ()
    samples: int = 0  # points the quantiles rest on
    basis: str = ""  # what the numbers are, e.g. "1h means over 14d"


def _significant(value: float | None) -> float | None:
    """Three significant digits: enough to draw, a third of the bytes of a full float."""
    if value is None or math.isnan(value):
        return None
    return float(f"{value:.3g}")


def encode_summary(summary: UsageSummary) -> dict[str, Any]:
    """The store's JSON form: quantiles as Kubernetes quantities, curves as short numbers."""
    return {
        "cpu": {q: render_cpu(Decimal(repr(v))) for q, v in summary.cpu.items()},
        # Memory rounded up to KiB: a byte count helps nobody reading a chart, and it is shorter.
        "memory": {q: render_bytes(Decimal(math.ceil(v / 1024) * 1024)) for q, v in summary.memory.items()},
        "cpuByHour": [_significant(v) for v in summary.cpu_by_hour],
        "memoryByHour": [_significant(v) for v in summary.memory_by_hour],
        "samples": summary.samples,
        "basis": summary.basis,
    }


def _quantities(raw: object, where: str) -> dict[str, float]:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: must be an object of quantities")
    try:
        return {str(q): float(parse(v)) for q, v in raw.items() if q in QUANTILES}
    except QuantityError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _curve(raw: object, where: str) -> tuple[float | None, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) not in (0, HOURS):
        raise ValueError(f"{where}: must be a list of {HOURS} numbers")
    if not all(v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in raw):
        raise ValueError(f"{where}: must be a list of {HOURS} numbers")
    return tuple(None if v is None else float(v) for v in raw)


def decode_summary(data: object, where: str) -> UsageSummary:
    """Parse the JSON form; ValueError names the field (the store turns it into a StoreError)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: must be an object")
    samples = data.get("samples", 0)
    if not isinstance(samples, int) or isinstance(samples, bool):
        raise ValueError(f"{where}.samples: must be an integer")
    return UsageSummary(
        cpu=_quantities(data.get("cpu", {}), f"{where}.cpu"),
        memory=_quantities(data.get("memory", {}), f"{where}.memory"),
        cpu_by_hour=_curve(data.get("cpuByHour"), f"{where}.cpuByHour"),
        memory_by_hour=_curve(data.get("memoryByHour"), f"{where}.memoryByHour"),
        samples=samples,
        basis=str(data.get("basis", "")),
    )


def decode_summaries(raw: object, *, where: str) -> dict[str, UsageSummary]:
    """A workload's summaries by container. One that cannot be read is left out, not an error: it is
    only for drawing, and the profiles beside it (what the webhook uses) must still load."""
    if not isinstance(raw, Mapping):
        return {}
    summaries = {}
    for name, data in raw.items():
        try:
            summaries[str(name)] = decode_summary(data, f"{where}/{name}")
        except ValueError:
            continue
    return summaries
