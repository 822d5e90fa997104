"""The recommender's own Prometheus metrics: did the last builds work, how long they took, what they wrote.

The recommender has no other HTTP endpoint, so these live in their own registry, served on
`recommend --metrics-port` (the alert rules in manifests/components/monitoring read them). No label
carries free text: an error message (which may name a URL) goes to the log, never into a series.
"""

from __future__ import annotations

import time
from threading import Thread
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from webhook.profiles.build import BuildResult
from webhook.profiles.runner import counts

__all__ = ["BuildMetrics"]

_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0)


class BuildMetrics:
    def __init__(self, *, interval: float) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.builds = Counter(
            "pod_tailor_recommender_builds", "Profile builds, by result (success, failure).", ["result"],
            registry=self.registry,
        )
        for result in ("success", "failure"):  # both exist from the start, so rate() works at once
            self.builds.labels(result)
        self.last_success = Gauge(
            "pod_tailor_recommender_last_success_timestamp_seconds",
            "When the last build that wrote the store finished (Unix time; 0: none yet).",
            registry=self.registry,
        )
        self.interval = Gauge(
            "pod_tailor_recommender_build_interval_seconds", "Seconds between builds (--interval).",
            registry=self.registry,
        )
        self.interval.set(interval)
        self.duration = Histogram(
            "pod_tailor_recommender_build_duration_seconds", "Time a build took, failed ones included.",
            buckets=_BUCKETS, registry=self.registry,
        )
        self.workloads = Gauge(
            "pod_tailor_recommender_workloads", "Workloads in the last store written.", registry=self.registry
        )
        self.containers = Gauge(
            "pod_tailor_recommender_containers",
            "Containers in the last store written, with and without a recommendation.", ["recommendation"],
            registry=self.registry,
        )
        self.leader = Gauge(
            "pod_tailor_recommender_leader",
            "1 while this replica holds the recommender's Lease (the one that builds); 1 without election.",
            registry=self.registry,
        )
        self.queries = Counter(
            "pod_tailor_recommender_prometheus_queries", "Queries sent to Prometheus by the builds.",
            registry=self.registry,
        )

    def succeeded(self, result: BuildResult) -> None:
        written = counts(result.document)
        self.builds.labels("success").inc()
        self.last_success.set(time.time())
        self.duration.observe(result.seconds)
        self.workloads.set(written.workloads)
        self.containers.labels("yes").set(written.recommended)
        self.containers.labels("no").set(written.without)
        self.queries.inc(result.queries)

    def failed(self, seconds: float) -> None:
        self.builds.labels("failure").inc()
        self.duration.observe(seconds)

    def serve(self, port: int, host: str = "0.0.0.0") -> tuple[WSGIServer, Thread]:
        """Plain HTTP /metrics in a daemon thread (the Pod network is the boundary; see the NetworkPolicy)."""
        return start_http_server(port, addr=host, registry=self.registry)
