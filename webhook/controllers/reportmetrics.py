"""The reports controller's Prometheus metrics, in their own registry (served on `--metrics-port`).

The result gauges carry Policy Reporter's label names (`namespace`, `policy`, `rule`, `status`, `source`
as in its `policy_report_result`; `namespace`, `source`, `status` as in `policy_report_summary`), so a
dashboard or alert written for Policy Reporter's metrics reads pod-tailor's with the metric name changed.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterable
from threading import Thread
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

__all__ = ["OUTCOMES", "ReportMetrics"]

# applied: a Report written (server-side apply); deleted: one of a workload out of scope; conflict: 409;
# gone: 404 (the CRD removed meanwhile); invalid: 422; error: anything else. All but the first two are
# tried again at the next pass.
OUTCOMES = ("applied", "deleted", "conflict", "gone", "invalid", "error")


class ReportMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.writes = Counter(
            "pod_tailor_report_writes",
            "Report writes by outcome (applied, deleted, conflict, gone, invalid, error).", ["outcome"],
            registry=self.registry,
        )  # fmt: skip
        for outcome in OUTCOMES:  # every outcome exists from the start, so rate() works at once
            self.writes.labels(outcome)
        self.passes = Counter(
            "pod_tailor_report_passes", "Passes over the workloads while leading (writes or not).",
            registry=self.registry,
        )  # fmt: skip
        self.reports = Gauge(
            "pod_tailor_report_workloads", "Workloads in scope, each with one Report.", registry=self.registry
        )
        self.installed = Gauge(
            "pod_tailor_report_crd_installed",
            "1 when the OpenReports Report CRD is served, else 0 (nothing is written).",
            registry=self.registry,
        )
        self.summary = Gauge(
            "pod_tailor_report_summary",
            "Results of pod-tailor's Reports by namespace and status (Policy Reporter's "
            "policy_report_summary labels).", ["namespace", "source", "status"], registry=self.registry,
        )  # fmt: skip
        self.results = Gauge(
            "pod_tailor_report_results",
            "Results of pod-tailor's Reports by namespace, policy, rule and status (Policy Reporter's "
            "policy_report_result labels, without the per-resource ones).",
            ["namespace", "policy", "rule", "status", "source"], registry=self.registry,
        )  # fmt: skip
        self.leader = Gauge(
            "pod_tailor_reports_controller_leader",
            "1 while this replica holds the reports controller's Lease (the one that writes); 1 unelected.",
            registry=self.registry,
        )

    def tally(self, reports: Iterable[dict[str, Any]]) -> None:
        """Set the result gauges from the Reports as the controller keeps them: per Report, its namespace
        and `tally`, the count of each "policy|rule|result|source"."""
        results: Tally[tuple[str, str, str, str, str]] = Tally()
        for report in reports:
            namespace = str((report.get("metadata") or {}).get("namespace"))
            for key, count in (report.get("tally") or {}).items():
                policy, rule, status, source = [*str(key).split("|"), "", "", ""][:4]
                results[(namespace, policy, rule, status, source)] += int(count)
        summary: Tally[tuple[str, str, str]] = Tally()
        for (namespace, _, _, status, source), count in results.items():
            summary[(namespace, source, status)] += count
        self.results.clear()
        self.summary.clear()
        for found, count in results.items():
            self.results.labels(*found).set(count)
        for totals, count in summary.items():
            self.summary.labels(*totals).set(count)

    def serve(self, port: int, host: str = "0.0.0.0") -> tuple[WSGIServer, Thread]:
        return start_http_server(port, addr=host, registry=self.registry)
