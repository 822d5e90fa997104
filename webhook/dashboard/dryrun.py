"""What dry-run namespaces would have got, read back from Prometheus (the webhook's own counters).

Why Prometheus and not the webhook's /metrics: the webhook runs as several replicas that restart;
Prometheus already scrapes them all, and `increase()` over a window adds the replicas up and rides
over counter resets. One query a refresh, for every namespace at once, never one per page.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from webhook.profiles.prometheus import Prometheus, PrometheusError

__all__ = ["DryRunSeen", "read_dry_run"]

PODS = "pod_tailor_dry_run_pods_total"
VALUES = "pod_tailor_dry_run_injections_total"


@dataclass(frozen=True, slots=True)
class DryRunSeen:
    """Per namespace: Pods admitted in dry-run over `window`, and what they would have got by field."""

    window: str
    pods: Mapping[str, int] = field(default_factory=dict)
    values: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # namespace -> field -> count
    error: str | None = None  # why there are no numbers (no Prometheus, a failed query)


def read_dry_run(prom: Prometheus, *, window: str = "24h", at: float) -> DryRunSeen:
    """One query per counter for every namespace; a failure is a value with the reason."""
    try:
        pods = prom.instant(f"sum by (namespace) (increase({PODS}[{window}]))", at=at)
        values = prom.instant(f"sum by (namespace, field) (increase({VALUES}[{window}]))", at=at)
    except PrometheusError as exc:
        return DryRunSeen(window, error=str(exc))
    by_field: defaultdict[str, dict[str, int]] = defaultdict(dict)
    for sample in values:
        count = round(sample.value)
        if count:
            by_field[sample.labels.get("namespace", "")][sample.labels.get("field", "")] = count
    counted = {s.labels.get("namespace", ""): round(s.value) for s in pods if round(s.value)}
    return DryRunSeen(window, counted, dict(by_field))
