"""The controllers' Prometheus metrics: each controller command's series in a registry of its own, served
on its `--metrics-port`.

No label carries free text: why something failed goes to the log (and into the Pod's record), a label
only says which kind of failure it was. Every value of a label exists from the start, so `rate()` works
at once. The series' names and labels are an interface (dashboards, alerts): docs/operations.md,
docs/in-place.md and docs/openreports.md list them.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterable, Sequence
from threading import Thread
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

__all__ = ["BOOST_FAILURES", "REPORT_WRITES", "RESIZE_RESULTS", "ReportMetrics", "ResizeMetrics"]

# Why a boosted Pod's CPU was not given back. refused: 422 from the API server; infeasible: the
# kubelet's answer; unreadable: the Pod's record; error: the API (403, 409, 5xx), tried again.
BOOST_FAILURES = ("refused", "infeasible", "unreadable", "error")
# What came of an in-place resize. resized: the API server took it; deferred: the kubelet waits for room;
# infeasible: never on this node (given back); refused: 422 from the API server; gone: the Pod was
# deleted meanwhile; error: anything else (403, 409, 5xx), tried again; dry_run: what --dry-run would ask.
RESIZE_RESULTS = ("resized", "deferred", "infeasible", "refused", "gone", "error", "dry_run")
# What came of a Report write. applied: written (server-side apply); deleted: one of a workload out of
# scope; conflict: 409; gone: 404 (the CRD removed meanwhile); invalid: 422; error: anything else. All
# but the first two are tried again at the next pass.
REPORT_WRITES = ("applied", "deleted", "conflict", "gone", "invalid", "error")
_BOOST_BUCKETS = (10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 3600.0)


class _Served:
    """A registry of one controller command's own, and its `/metrics` over HTTP."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)

    def counter(self, name: str, text: str, label: str = "", values: Sequence[str] = ()) -> Counter:
        """A counter in this registry; with `label`, each of `values` exists from the start."""
        made = Counter(name, text, [label] if label else [], registry=self.registry)
        for value in values:
            made.labels(value)
        return made

    def gauge(self, name: str, text: str, labels: Sequence[str] = ()) -> Gauge:
        return Gauge(name, text, list(labels), registry=self.registry)

    def serve(self, port: int, host: str = "0.0.0.0") -> tuple[WSGIServer, Thread]:
        return start_http_server(port, addr=host, registry=self.registry)


class ResizeMetrics(_Served):
    """`pod-tailor rightsize`: the boost duty's and in-place right-sizing's series, on one `/metrics`."""

    def __init__(self) -> None:
        super().__init__()
        # The boost duty: boosted Pods given their steady CPU back.
        self.started = self.counter(
            "pod_tailor_boost_started", "Boosted Pods this controller began to follow."
        )
        self.reverted = self.counter("pod_tailor_boost_reverted", "Pods resized back to their steady CPU.")
        self.failures = self.counter(
            "pod_tailor_boost_resize_failures",
            "Pods whose CPU could not be given back, by reason (refused: 422; infeasible: the kubelet; "
            "unreadable: the record; error: the API, retried).", "reason", BOOST_FAILURES,
        )  # fmt: skip
        self.deferred = self.counter(
            "pod_tailor_boost_resize_deferred", "Resizes the kubelet deferred (it retries them)."
        )
        self.seconds = Histogram(
            "pod_tailor_boost_seconds", "Seconds from a Pod's start until its CPU was given back.",
            buckets=_BOOST_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.boosted = self.gauge("pod_tailor_boost_pods", "Pods labelled boosted that this controller sees.")
        # In-place right-sizing of running Pods.
        self.resizes = self.counter(
            "pod_tailor_resizes",
            "In-place right-sizing resizes by result (resized, deferred, infeasible, refused, gone, error, "
            "dry_run).", "result", RESIZE_RESULTS,
        )  # fmt: skip
        self.pending = self.gauge(
            "pod_tailor_resizes_pending",
            "Pods whose resize pod-tailor asked for and the kubelet has not applied yet.",
        )
        self.supported = self.gauge(
            "pod_tailor_rightsize_supported",
            "1 when the cluster serves in-place resize (Kubernetes 1.33+ with pods/resize), else 0.",
        )
        self.leader = self.gauge(
            "pod_tailor_boost_controller_leader",
            "1 while this replica holds the boost controller's Lease (the one that resizes); 1 unelected.",
        )


class ReportMetrics(_Served):
    """`pod-tailor reports`: the OpenReports controller's series.

    The result gauges carry Policy Reporter's label names (`namespace`, `policy`, `rule`, `status`,
    `source` as in its `policy_report_result`; `namespace`, `source`, `status` as in
    `policy_report_summary`), so a dashboard or alert written for Policy Reporter's metrics reads
    pod-tailor's with the metric name changed.
    """

    def __init__(self) -> None:
        super().__init__()
        self.writes = self.counter(
            "pod_tailor_report_writes",
            "Report writes by outcome (applied, deleted, conflict, gone, invalid, error).", "outcome",
            REPORT_WRITES,
        )  # fmt: skip
        self.passes = self.counter(
            "pod_tailor_report_passes", "Passes over the workloads while leading (writes or not)."
        )
        self.reports = self.gauge("pod_tailor_report_workloads", "Workloads in scope, each with one Report.")
        self.installed = self.gauge(
            "pod_tailor_report_crd_installed",
            "1 when the OpenReports Report CRD is served, else 0 (nothing is written).",
        )
        self.summary = self.gauge(
            "pod_tailor_report_summary",
            "Results of pod-tailor's Reports by namespace and status (Policy Reporter's "
            "policy_report_summary labels).", ("namespace", "source", "status"),
        )  # fmt: skip
        self.results = self.gauge(
            "pod_tailor_report_results",
            "Results of pod-tailor's Reports by namespace, policy, rule and status (Policy Reporter's "
            "policy_report_result labels, without the per-resource ones).",
            ("namespace", "policy", "rule", "status", "source"),
        )  # fmt: skip
        self.leader = self.gauge(
            "pod_tailor_reports_controller_leader",
            "1 while this replica holds the reports controller's Lease (the one that writes); 1 unelected.",
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
        for result, count in results.items():
            self.results.labels(*result).set(count)
        for totals, count in summary.items():
            self.summary.labels(*totals).set(count)
