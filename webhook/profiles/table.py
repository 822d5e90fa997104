"""`profiles show` as a table: one row per workload and container, with the evidence behind each number."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from webhook.core.model.profile import NoRecommendation, Recommendation
from webhook.core.model.quantity import render_bytes, render_cpu
from webhook.profiles.store import ProfileDocument, WorkloadEntry

__all__ = ["render_table", "select"]


def select(document: ProfileDocument, selector: str | None) -> dict[Any, WorkloadEntry]:
    if not selector:
        return dict(document.workloads)
    parts = selector.split("/")
    out = {}
    for key, entry in document.workloads.items():
        if key.namespace != parts[0]:
            continue
        if len(parts) == 2 and key.name != parts[1]:
            continue
        if len(parts) >= 3 and (key.kind.lower() != parts[1].lower() or key.name != "/".join(parts[2:])):
            continue
        out[key] = entry
    return out


def _evidence(profile: Recommendation) -> str:
    ev = profile.evidence
    text = (
        f"p{ev.cpu_percentile:g} +{ev.memory_margin * 100:g}% over {ev.window}: {ev.hours:.0f}h, "
        f"{ev.samples} pts, confidence {ev.confidence:.2f}"
    )
    if ev.oom_kills:
        text += f", {ev.oom_kills} OOM kill(s)"
    if profile.startup_cpu is not None and profile.startup_cpu > profile.cpu:
        text += f", start-up peak {render_cpu(profile.startup_cpu)}"
        if profile.startup_seconds is not None:
            text += f" for {profile.startup_seconds:.0f}s"
    return text


def _current(entry: WorkloadEntry, container: str) -> str:
    now: dict[str, Decimal] = dict(entry.current.get(container, {}))
    if not now:
        return "-"
    cpu = render_cpu(now["cpu"]) if "cpu" in now else "-"
    memory = render_bytes(now["memory"]) if "memory" in now else "-"
    return f"{cpu}/{memory}"


def render_table(workloads: dict[Any, WorkloadEntry]) -> str:
    rows = [("WORKLOAD", "CONTAINER", "CPU", "MEMORY", "CURRENT", "EVIDENCE")]
    for key in sorted(workloads):
        entry = workloads[key]
        for name, profile in sorted(entry.containers.items()):
            if isinstance(profile, NoRecommendation):
                rows.append((str(key), name, "-", "-", _current(entry, name), f"none: {profile.reason}"))
            else:
                rows.append((
                    str(key), name, render_cpu(profile.cpu), render_bytes(profile.memory),
                    _current(entry, name), _evidence(profile),
                ))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:5], widths, strict=True)) + "  " + row[5]
        for row in rows
    )
