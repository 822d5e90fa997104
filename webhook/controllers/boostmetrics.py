"""The boost controller's Prometheus metrics, in their own registry (served on `--metrics-port`).

No label carries free text: why a resize failed goes to the log and into the Pod's record, the metric
only says which kind of failure it was.
"""

from __future__ import annotations

from threading import Thread
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

__all__ = ["FAILURE_REASONS", "BoostMetrics"]

FAILURE_REASONS = ("refused", "infeasible", "unreadable", "error")
_BUCKETS = (10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 3600.0)


class BoostMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.started = Counter(
            "pod_tailor_boost_started",
            "Boosted Pods this controller began to follow.",
            registry=self.registry,
        )
        self.reverted = Counter(
            "pod_tailor_boost_reverted", "Pods resized back to their steady CPU.", registry=self.registry
        )
        self.failures = Counter(
            "pod_tailor_boost_resize_failures",
            "Pods whose CPU could not be given back, by reason (refused: 422; infeasible: the kubelet; "
            "unreadable: the record; error: the API, retried).", ["reason"], registry=self.registry,
        )  # fmt: skip
        for reason in FAILURE_REASONS:  # every reason exists from the start, so rate() works at once
            self.failures.labels(reason)
        self.deferred = Counter(
            "pod_tailor_boost_resize_deferred",
            "Resizes the kubelet deferred (it retries them).",
            registry=self.registry,
        )
        self.seconds = Histogram(
            "pod_tailor_boost_seconds",
            "Seconds from a Pod's start until its CPU was given back.",
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.boosted = Gauge(
            "pod_tailor_boost_pods",
            "Pods labelled boosted that this controller sees.",
            registry=self.registry,
        )
        self.leader = Gauge(
            "pod_tailor_boost_controller_leader",
            "1 while this replica holds the boost controller's Lease (the one that resizes); 1 unelected.",
            registry=self.registry,
        )

    def serve(self, port: int, host: str = "0.0.0.0") -> tuple[WSGIServer, Thread]:
        return start_http_server(port, addr=host, registry=self.registry)
