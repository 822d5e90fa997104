"""Prometheus metrics of one app, in its own registry (several apps can live in one test process).

The admission counters are plain integers that the request path bumps and a collector turns into
metric families when `/metrics` is scraped. prometheus_client's own children take a lock and a few
calls per `inc()`: with a dozen injections per Pod that cost more than answering a cached admission.
Requests and scrapes both run on the event loop's one thread, so the integers need no lock.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping

from prometheus_client import REGISTRY, CollectorRegistry, Gauge, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from webhook.admission import Answer, ErrorReason, Outcome
from webhook.refreshers.state import State
from webhook.server.dryrun_counts import DryRunCounts

__all__ = ["Metrics"]

# Admission answers take well under a millisecond; the API server's timeout is 10 s by default.
_BUCKETS = (0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5, 10.0)


class _AdmissionCounts(Collector):
    """Requests by outcome, latency, injections by field and errors by reason, exported at scrape time."""

    def __init__(self) -> None:
        # Every outcome and reason exists from the start, so rate() and absent() work before the first.
        self.outcomes = dict.fromkeys(Outcome, 0)
        self.reasons = dict.fromkeys(ErrorReason, 0)
        self.injections: defaultdict[tuple[str, str, bool], int] = defaultdict(int)
        self.buckets = [0] * (len(_BUCKETS) + 1)  # the last one is +Inf
        self.latency_sum = 0.0
        self.dry_run = DryRunCounts()  # per namespace: what dry-run mode would have set
        self.capped: defaultdict[tuple[str, str, bool], int] = defaultdict(int)  # rule, namespace, applied

    def record(self, answer: Answer, seconds: float) -> None:
        self.outcomes[answer.outcome] += 1
        self.buckets[bisect.bisect_left(_BUCKETS, seconds)] += 1
        self.latency_sum += seconds
        if answer.error is not None:
            self.reasons[answer.error] += 1
        if answer.outcome is Outcome.DRY_RUN:
            self.dry_run.record(answer)
        applied = answer.applied
        for kind, source, count in answer.injection_counts:
            self.injections[(kind, source, applied)] += count
        for rule in answer.capped:
            self.capped[(rule, answer.namespace or "", applied)] += 1

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "pod_tailor_admission_requests", "Admission requests answered, by outcome.", labels=["outcome"]
        )
        for outcome, count in self.outcomes.items():
            requests.add_metric([outcome.value], count)
        yield requests
        cumulative, running = [], 0
        for bound, count in zip((*_BUCKETS, float("inf")), self.buckets, strict=True):
            running += count
            cumulative.append((_bound(bound), running))
        yield HistogramMetricFamily(
            "pod_tailor_admission_duration_seconds", "Time to answer an admission request (in the app).",
            buckets=cumulative, sum_value=self.latency_sum,
        )
        yield _by_applied(
            "pod_tailor_injections",
            "Values injected, by field and source (profile: usage history, policy: the policy's values);"
            " applied=false for namespace dry-run mode and request.dryRun.",
            ["field", "source"],
            self.injections,
        )
        errors = CounterMetricFamily(
            "pod_tailor_errors", "Requests that failed, by reason.", labels=["reason"]
        )
        for reason, count in self.reasons.items():
            errors.add_metric([reason.value], count)
        yield errors
        yield _by_applied(
            "pod_tailor_capped_decisions",
            "Decisions in which a value was lowered so the Pod still runs, by rule (fit: the largest node "
            "the Pod may land on; quota: the namespace's ResourceQuotas) and namespace.",
            ["rule", "namespace"],
            self.capped,
        )
        yield from self.dry_run.collect()


def _by_applied(
    name: str, documentation: str, labels: list[str], counts: Mapping[tuple[str, str, bool], int]
) -> CounterMetricFamily:
    """A counter by `labels` and `applied` (the last part of each key: false for dry runs), sorted."""
    family = CounterMetricFamily(name, documentation, labels=[*labels, "applied"])
    for (first, second, applied), count in sorted(counts.items()):
        family.add_metric([first, second, "true" if applied else "false"], count)
    return family


def _bound(value: float) -> str:
    return "+Inf" if value == float("inf") else repr(value)


class Metrics:
    def __init__(self, state: State) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.admission = _AdmissionCounts()
        self.registry.register(self.admission)
        self.snapshot_age = Gauge(
            "pod_tailor_snapshot_age_seconds", "Seconds since each snapshot was taken (0: never).",
            ["snapshot"], registry=self.registry,
        )
        for name in state.ages():
            self.snapshot_age.labels(name).set_function(_age_of(state, name))
        self.record = self.admission.record

    def render(self) -> bytes:
        """This app's series, then the process-wide ones (cluster watches, process and GC collectors)."""
        return generate_latest(self.registry) + generate_latest(REGISTRY)


def _age_of(state: State, name: str) -> Callable[[], float]:
    return lambda: state.ages()[name]
