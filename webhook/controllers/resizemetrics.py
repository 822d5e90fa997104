"""The resize controller's right-sizing metrics, in the registry of its boost metrics (one `/metrics`)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

__all__ = ["RESULTS", "RightsizeMetrics"]

# resized: the API server took the resize; deferred: the kubelet waits for room; infeasible: never on
# this node (given back); refused: 422 from the API server; gone: the Pod was deleted meanwhile;
# error: anything else, tried again; dry_run: what --dry-run would have asked.
RESULTS = ("resized", "deferred", "infeasible", "refused", "gone", "error", "dry_run")


class RightsizeMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.resizes = Counter(
            "pod_tailor_resizes",
            "In-place right-sizing resizes by result (resized, deferred, infeasible, refused, gone, error, "
            "dry_run).", ["result"], registry=registry,
        )  # fmt: skip
        for result in RESULTS:  # every result exists from the start, so rate() works at once
            self.resizes.labels(result)
        self.pending = Gauge(
            "pod_tailor_resizes_pending",
            "Pods whose resize pod-tailor asked for and the kubelet has not applied yet.",
            registry=registry,
        )
        self.supported = Gauge(
            "pod_tailor_rightsize_supported",
            "1 when the cluster serves in-place resize (Kubernetes 1.33+ with pods/resize), else 0.",
            registry=registry,
        )
