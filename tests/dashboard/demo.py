"""A small demo fleet for the dashboard tests, the docs' screenshots and `bench/report.py`.

A cluster (objects to put into the fake API server), a profile store with usage summaries, and the
webhook's dry-run counters as Prometheus would have scraped them (OpenMetrics for promtool).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, TextIO

from tests.report.fleet import container, namespace, resources, workload
from webhook.core.model.profile import Evidence, NoRecommendation, Recommendation
from webhook.core.model.quantity import parse
from webhook.core.model.workload import WorkloadKey
from webhook.profiles.store import FileStore, ProfileDocument, WorkloadEntry
from webhook.profiles.summary import UsageSummary

Obj = dict[str, Any]
MIB = 2**20
# What dry-run would have set in namespace `trial` over the last hours: 40 Pods of Deployment/api (its
# LimitRange sets their cpu request, so pod-tailor does not).
DRY_RUN = {
    "requests.memory": 40,
    "limits.memory": 40,
    "readinessProbe": 40,
    "startupProbe": 40,
    "preStop": 40,
    "terminationGracePeriodSeconds": 40,
}


def objects() -> Iterator[Obj]:
    yield namespace("shop", "enforce")
    yield namespace("trial", "dry-run")
    yield namespace("idle")
    yield workload(
        "Deployment",
        "web",
        container("app", port=8080),
        container("envoy", port=9901, resources=resources({"cpu": "100m", "memory": "128Mi"})),
        replicas=3,
    )
    yield workload(
        "StatefulSet",
        "db",
        container(
            "postgres",
            port=5432,
            resources=resources({"cpu": "500m", "memory": "1Gi"}),
            readinessProbe={"tcpSocket": {"port": 5432}, "periodSeconds": 10},
        ),
        replicas=2,
    )
    yield workload("CronJob", "nightly", container("job"))
    yield workload(
        "Deployment",
        "api",
        container("app", port=8080, env=[{"name": "DB_PASSWORD", "value": "hunter2-not-for-the-dashboard"}]),
        namespace="trial",
        replicas=2,
    )
    yield workload(
        "DaemonSet",
        "agent",
        container("agent", resources=resources(limits={"cpu": "200m"})),
        namespace="trial",
        status={"desiredNumberScheduled": 4},
    )
    yield {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "defaults", "namespace": "trial"},
        "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "250m"}}]},
    }
    yield workload("Deployment", "batchy", container("app"), namespace="idle")


def _evidence(confidence: float = 0.93) -> Evidence:
    return Evidence(
        window="14d",
        samples=8018,
        hours=335.0,
        cpu_percentile=95.0,
        memory_margin=0.15,
        confidence=confidence,
    )


def _curve(base: float, swing: float, peak_hour: int) -> list[float | None]:
    return [base * (1 + swing * math.cos((hour - peak_hour) / 24 * 2 * math.pi)) for hour in range(24)]


def summary(cpu: float, memory: float, *, peak_hour: int = 14) -> UsageSummary:
    """A daily cycle peaking at `peak_hour`: cpu p95 near `cpu` cores, memory peak near `memory` bytes."""
    return UsageSummary(
        cpu={"p50": cpu * 0.55, "p90": cpu * 0.85, "p95": cpu, "p99": cpu * 1.25, "max": cpu * 1.6},
        memory={
            "p50": memory * 0.8,
            "p90": memory * 0.9,
            "p95": memory * 0.93,
            "p99": memory * 0.97,
            "max": memory,
        },
        cpu_by_hour=_curve(cpu * 0.6, 0.5, peak_hour),
        memory_by_hour=_curve(memory * 0.82, 0.08, peak_hour),
        samples=8018,
        basis="5m samples over 14d",
    )


def profiles(*, now: float | None = None) -> ProfileDocument:
    def rec(cpu: str, memory: str, **extra: Any) -> Recommendation:
        return Recommendation(cpu=parse(cpu), memory=parse(memory), evidence=_evidence(), **extra)

    entries = {
        WorkloadKey("shop", "Deployment", "web"): WorkloadEntry(
            {
                "app": rec("350m", "600Mi", startup_cpu=Decimal("1.2"), startup_seconds=45.0),
                "envoy": rec("60m", "90Mi"),
            },
            summaries={"app": summary(0.33, 520 * MIB), "envoy": summary(0.055, 78 * MIB, peak_hour=15)},
        ),
        WorkloadKey("shop", "StatefulSet", "db"): WorkloadEntry(
            {"postgres": NoRecommendation("only 2.0h and 24 samples of history (needs 24h and 100)")},
            summaries={"postgres": summary(0.2, 700 * MIB, peak_hour=3)},
        ),
        WorkloadKey("shop", "CronJob", "nightly"): WorkloadEntry({"job": rec("1", "256Mi")}),
    }
    built = (time.time() if now is None else now) - 2 * 3600
    return ProfileDocument(entries, built, "prometheus http://prometheus:9090, 14d (demo)", "14d")


def write_store(path: Path) -> Path:
    FileStore(path).write(profiles())
    return path


def write_dry_run_history(out: TextIO, *, end: float, hours: int = 3, step: int = 60) -> None:
    """The webhook's dry-run counters over the last `hours`, as OpenMetrics (one family at a time)."""
    times = list(range(int(end) - hours * 3600, int(end) - 120, step))
    pods_total = DRY_RUN["readinessProbe"]
    out.write("# TYPE pod_tailor_dry_run_pods counter\n")
    for i, t in enumerate(times):
        out.write(
            f'pod_tailor_dry_run_pods_total{{namespace="trial"}} {pods_total * i // (len(times) - 1)} {t}\n'
        )
    out.write("# TYPE pod_tailor_dry_run_injections counter\n")
    for field, total in sorted(DRY_RUN.items()):
        for i, t in enumerate(times):
            labels = f'namespace="trial",field="{field}"'
            out.write(
                f"pod_tailor_dry_run_injections_total{{{labels}}} {total * i // (len(times) - 1)} {t}\n"
            )
    out.write("# EOF\n")
