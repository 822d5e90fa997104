"""What a report row says pod-tailor injects, in the engine's own terms, to compare with `preview`."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonpatch

from webhook.core.model.decision import Decision
from webhook.core.model.pod import containers
from webhook.core.model.quantity import parse, render
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot
from webhook.offline.preview import run_preview
from webhook.report.model import RESOURCE_FIELDS, WorkloadReport

Said = set[tuple[str, str, str, str]]  # (target, field, value, source)


def report_says(row: WorkloadReport) -> Said:
    """Every value the row says pod-tailor sets: resources that change, probes, preStop, grace."""
    said: Said = {(c.name, a.field, a.value, a.source) for c in row.containers for a in c.adds}
    said |= {("pod", a.field, a.value, a.source) for a in row.pod_adds}
    for body in row.containers:
        for key in RESOURCE_FIELDS:
            after, origin = body.value("recommended", key), body.sources.get(key)
            if after is not None and origin is not None and after != body.value("current", key):
                said.add((body.name, key, render(key.split(".")[1], after), origin.detail))
    return said


def report_warnings(row: WorkloadReport) -> Counter[str]:
    found = Counter(row.warnings)
    found.update(f"{body.name}: {warning}" for body in row.containers for warning in body.warnings)
    return found


def preview_decisions(path: Path, *, cluster: ClusterSnapshot, profiles: ProfileSnapshot) -> list[Decision]:
    return [found.decision for found in run_preview(path.read_text(), cluster=cluster, profiles=profiles)]


def patched(pod: dict[str, Any], decision: Decision) -> dict[str, dict[str, dict[str, Decimal]]]:
    """Each container's requests and limits in the Pod with the decision's patch applied."""
    after = jsonpatch.apply_patch(pod, list(decision.ops))
    return {
        ref.name: {
            section: {
                name: parse(value)
                for name, value in ((ref.body.get("resources") or {}).get(section) or {}).items()
            }
            for section in ("requests", "limits")
        }
        for ref in containers(after)
    }


def preview_says(decision: Decision) -> Said:
    return {(i.target, i.field, i.value, i.source) for i in decision.injections}
