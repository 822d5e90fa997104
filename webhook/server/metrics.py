"""Prometheus metrics of one app, in its own registry (several apps can live in one test process)."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from webhook.admission import Answer, ErrorReason, Outcome
from webhook.state import State

__all__ = ["Metrics"]

# Admission answers take well under a millisecond; the API server's timeout is 10 s by default.
_BUCKETS = (0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5, 10.0)


class Metrics:
    def __init__(self, state: State) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "pod_tailor_admission_requests", "Admission requests answered, by outcome.", ["outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "pod_tailor_admission_duration_seconds", "Time to answer an admission request (in the app).",
            buckets=_BUCKETS, registry=self.registry,
        )
        self.injections = Counter(
            "pod_tailor_injections",
            "Values injected, by field; applied=false for namespace dry-run mode and request.dryRun.",
            ["field", "applied"], registry=self.registry,
        )
        self.errors = Counter(
            "pod_tailor_errors", "Requests that failed, by reason.", ["reason"], registry=self.registry
        )
        self.snapshot_age = Gauge(
            "pod_tailor_snapshot_age_seconds", "Seconds since each snapshot was taken (0: never).",
            ["snapshot"], registry=self.registry,
        )
        for name in state.ages():
            self.snapshot_age.labels(name).set_function(_age_of(state, name))
        # Every series exists from the start (so rate() and absent() work before the first event), and
        # the children are kept here: `labels()` per request costs more than the rest of `record`.
        self._by_outcome = {outcome: self.requests.labels(outcome.value) for outcome in Outcome}
        self._by_reason = {reason: self.errors.labels(reason.value) for reason in ErrorReason}
        self._by_field: dict[tuple[str, bool], Counter] = {}

    def record(self, answer: Answer, seconds: float) -> None:
        self._by_outcome[answer.outcome].inc()
        self.latency.observe(seconds)
        if answer.error is not None:
            self._by_reason[answer.error].inc()
        for injection in answer.injections:
            key = (injection.field, answer.applied)
            child = self._by_field.get(key)
            if child is None:
                child = self._by_field[key] = self.injections.labels(
                    _field_kind(injection.field), "true" if answer.applied else "false"
                )
            child.inc()

    def render(self) -> bytes:
        """This app's series, then the process-wide ones (cluster watches, process and GC collectors)."""
        return generate_latest(self.registry) + generate_latest(REGISTRY)


def _age_of(state: State, name: str) -> Callable[[], float]:
    return lambda: state.ages()[name]


def _field_kind(field: str) -> str:
    """Bounded label values: `requests.cpu`, `readinessProbe`, ... (no container names)."""
    return field.split(" ", 1)[0][:64]
