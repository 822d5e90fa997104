"""The report as a stable document (`-o json`, `-o yaml`, the dashboard's `/api`) and as CSV rows.

Quantities are Kubernetes strings (`250m`, `512Mi`); times are RFC 3339 UTC. The shape is part of
pod-tailor's interface: fields are added, never renamed or removed, within `pod-tailor.io/report/v1`.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import orjson
import yaml

from webhook.core.model.quantity import render
from webhook.profiles.store import encode_profile
from webhook.profiles.summary import encode_summary
from webhook.report.model import (
    RESOURCE_FIELDS,
    Added,
    ContainerReport,
    Origin,
    Report,
    Totals,
    WorkloadReport,
)

__all__ = [
    "API_VERSION",
    "CSV_COLUMNS",
    "quantities",
    "render_csv",
    "render_json",
    "render_yaml",
    "report_document",
    "stamp",
    "totals_document",
    "workload_document",
]

API_VERSION = "pod-tailor.io/report/v1"


def stamp(epoch: float) -> str | None:
    """RFC 3339 UTC, or None for 0 (never)."""
    if not epoch:
        return None
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def quantities(values: Mapping[str, Decimal]) -> dict[str, str]:
    return {name: render(name, value) for name, value in sorted(values.items())}


def _resources(values: Mapping[str, Mapping[str, Decimal]]) -> dict[str, dict[str, str]]:
    return {section: quantities(values.get(section, {})) for section in ("requests", "limits")}


def _origin(origin: Origin) -> dict[str, Any]:
    out: dict[str, Any] = {"from": origin.kind}
    if origin.detail:
        out["detail"] = origin.detail
    for key, value in (
        ("confidence", origin.confidence),
        ("samples", origin.samples),
        ("hours", origin.hours),
        ("window", origin.window),
    ):
        if value is not None:
            out[key] = value
    return out


def _adds(adds: Iterable[Added]) -> list[dict[str, str]]:
    return [{"field": a.field, "value": a.value, "source": a.source} for a in adds]


def _container(container: ContainerReport) -> dict[str, Any]:
    return {
        "name": container.name,
        "role": container.role,
        "current": _resources(container.current),
        "recommended": _resources(container.recommended),
        "sources": {key: _origin(origin) for key, origin in container.sources.items()},
        "adds": _adds(container.adds),
        "warnings": list(container.warnings),
        "serving": container.serving,
        "profile": encode_profile(container.profile) if container.profile is not None else None,
        "summary": encode_summary(container.summary) if container.summary is not None else None,
    }


def workload_document(workload: WorkloadReport) -> dict[str, Any]:
    return {
        "kind": workload.kind,
        "namespace": workload.namespace,
        "name": workload.name,
        "replicas": workload.replicas,
        "mode": workload.mode,
        "assumedOptedIn": workload.assumed,
        "policy": workload.policy,
        "profileKey": workload.profile_key,
        "changes": workload.changed,
        "skipped": workload.skipped,
        "containers": [_container(c) for c in workload.containers],
        "pod": {
            "adds": _adds(workload.pod_adds),
            "requests": {"now": quantities(workload.requests[0]), "after": quantities(workload.requests[1])},
            "limits": {"now": quantities(workload.limits[0]), "after": quantities(workload.limits[1])},
        },
        "warnings": list(workload.warnings),
        "source": workload.source,
    }


def _pair(values: tuple[int, int]) -> dict[str, int]:
    return {"now": values[0], "after": values[1]}


def totals_document(totals: Totals) -> dict[str, Any]:
    return {
        "workloads": totals.workloads,
        "changed": totals.changed,
        "pods": totals.pods,
        "containers": totals.containers,
        "requests": {"now": quantities(totals.requests_now), "after": quantities(totals.requests_after)},
        "limits": {"now": quantities(totals.limits_now), "after": quantities(totals.limits_after)},
        "withoutRequests": _pair(totals.without_requests),
        "servingContainers": totals.serving,
        "withoutReadiness": _pair(totals.without_readiness),
        "withoutPreStop": _pair(totals.without_pre_stop),
        "origins": dict(sorted(totals.origins.items())),
    }


def report_document(report: Report, *, workloads: bool = True) -> dict[str, Any]:
    """The whole document; `workloads=False` leaves their list empty (for a caller that has them
    encoded already)."""
    namespaces = {
        ns: {"mode": report.modes.get(ns, ""), "policy": report.policies.get(ns, ""), **totals_document(t)}
        for ns, t in report.namespaces.items()
    }
    return {
        "apiVersion": API_VERSION,
        "kind": "Report",
        "generatedAt": stamp(report.generated_at),
        "source": report.source,
        "profiles": {"source": report.profiles, "builtAt": stamp(report.profiles_at)},
        "problems": list(report.problems),
        "changes": report.changed,
        "totals": {"cluster": totals_document(report.cluster), "namespaces": namespaces},
        "inPlace": dict(report.in_place),
        "workloads": [workload_document(w) for w in report.workloads] if workloads else [],  # last: see
    }  # webhook.dashboard.app._with_workloads


def render_json(report: Report) -> str:
    # orjson: a fleet's document is tens of MB, which the standard library takes seconds to write.
    return orjson.dumps(report_document(report), option=orjson.OPT_INDENT_2).decode() + "\n"


def render_yaml(report: Report) -> str:
    return yaml.safe_dump(report_document(report), sort_keys=False, width=10_000)


CSV_COLUMNS = (
    "namespace",
    "kind",
    "name",
    "replicas",
    "mode",
    "policy",
    "container",
    "role",
    *(f"{field}_{part}" for field in RESOURCE_FIELDS for part in ("now", "after", "from")),
    "confidence",
    "adds",
    "pod_adds",
    "warnings",
    "traffic_path",
    "source",
)


def _csv_row(workload: WorkloadReport, container: ContainerReport) -> list[str]:
    row = [
        workload.namespace,
        workload.kind,
        workload.name,
        str(workload.replicas),
        workload.mode,
        workload.policy,
        container.name,
        container.role,
    ]
    confidence = ""
    for field in RESOURCE_FIELDS:
        resource = field.split(".", 1)[1]
        now, after = container.value("current", field), container.value("recommended", field)
        origin = container.sources.get(field)
        row += [
            "" if now is None else render(resource, now),
            "" if after is None else render(resource, after),
            origin.kind if origin else "",
        ]
        if origin is not None and origin.confidence is not None:
            confidence = f"{origin.confidence:g}"
    row += [
        confidence,
        "; ".join(f"{a.field}={a.value}" for a in container.adds),
        "; ".join(f"{a.field}={a.value}" for a in workload.pod_adds),
        "; ".join([*container.warnings, *workload.warnings]),
        container.traffic_path,
        workload.source,
    ]
    return row


def render_csv(report: Report) -> str:
    """One row per container, with its workload's columns repeated (spreadsheets filter by them)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for workload in report.workloads:
        for container in workload.containers:
            writer.writerow(_csv_row(workload, container))
    return out.getvalue()
