"""What pod-tailor would have injected in dry-run namespaces, counted per namespace and field kind.

A dry-run warning on a Pod that a controller creates reaches only the controller's log, so a dry-run
namespace is silent for the people who own it. These counters make it visible (the dashboard's
namespace page reads them back from Prometheus). Namespaces are a bounded label (a cluster has
hundreds, not millions; past `MAX_NAMESPACES` they count under `_other`); workloads are never a label.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from webhook.admission import Answer

__all__ = ["MAX_NAMESPACES", "OTHER", "DryRunCounts"]

MAX_NAMESPACES = 5000
OTHER = "_other"  # not a valid namespace name, so it cannot collide with one


class DryRunCounts(Collector):
    """Pods answered in dry-run mode and the values they would have got, by namespace (and field)."""

    def __init__(self) -> None:
        self.pods: defaultdict[str, int] = defaultdict(int)
        self.injections: defaultdict[tuple[str, str], int] = defaultdict(int)

    def record(self, answer: Answer) -> None:
        """Called for dry-run answers only (the caller checks the outcome)."""
        namespace = answer.namespace or ""
        if namespace not in self.pods and len(self.pods) >= MAX_NAMESPACES:
            namespace = OTHER
        self.pods[namespace] += 1
        for kind, _source, count in answer.injection_counts:
            self.injections[(namespace, kind)] += count

    def collect(self) -> Iterator[Metric]:
        pods = CounterMetricFamily(
            "pod_tailor_dry_run_pods",
            "Pods admitted in dry-run namespaces (pod-tailor said what it would set, set nothing).",
            labels=["namespace"],
        )
        for namespace, count in sorted(self.pods.items()):
            pods.add_metric([namespace], count)
        yield pods
        values = CounterMetricFamily(
            "pod_tailor_dry_run_injections",
            "Values pod-tailor would have injected in dry-run namespaces, by namespace and field.",
            labels=["namespace", "field"],
        )
        for (namespace, kind), count in sorted(self.injections.items()):
            values.add_metric([namespace, kind], count)
        yield values
