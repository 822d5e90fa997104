"""The admission metrics: plain counters exported at scrape time, in Prometheus' own text format."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from webhook.admission import Answer, ErrorReason, Outcome, Verdict, VerdictCache
from webhook.admission.verdict import source_kind
from webhook.config.policies import bundled_policies
from webhook.config.settings import Settings
from webhook.core.model.decision import Basis, Injection
from webhook.core.snapshot import ClusterSnapshot
from webhook.refreshers.state import State
from webhook.server.app import create_app
from webhook.server.metrics import Metrics


def fresh() -> Metrics:
    return Metrics(State(cluster=ClusterSnapshot(policies=bundled_policies())))


def samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = metrics.render().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def answer(outcome: Outcome = Outcome.PATCHED, **fields: object) -> Answer:
    return Answer(200, b"{}", outcome, **fields)  # type: ignore[arg-type]


class TestLatency:
    @pytest.mark.parametrize(
        ("seconds", "first_bucket"),
        [(0.0001, "0.00025"), (0.00025, "0.00025"), (0.0003, "0.0005"), (0.004, "0.005"), (60.0, "+Inf")],
    )
    def test_a_duration_is_counted_in_every_bucket_from_the_first_bound_not_below_it(
        self, seconds: float, first_bucket: str
    ) -> None:
        metrics = fresh()
        metrics.record(answer(), seconds)
        found = samples(metrics)
        buckets = {
            dict(labels)["le"]: value
            for (name, labels), value in found.items()
            if name == "pod_tailor_admission_duration_seconds_bucket"
        }
        first = list(buckets).index(first_bucket)
        assert list(buckets.values()) == [0.0] * first + [1.0] * (len(buckets) - first)
        assert found[("pod_tailor_admission_duration_seconds_count", ())] == 1.0
        assert found[("pod_tailor_admission_duration_seconds_sum", ())] == pytest.approx(seconds)


class TestCounters:
    def test_every_outcome_and_error_reason_is_exported_from_the_start(self) -> None:
        found = samples(fresh())
        for outcome in Outcome:
            assert found[("pod_tailor_admission_requests_total", (("outcome", outcome.value),))] == 0.0
        for reason in ErrorReason:
            assert found[("pod_tailor_errors_total", (("reason", reason.value),))] == 0.0

    def test_injections_are_counted_by_field_kind_and_whether_they_were_applied(self) -> None:
        metrics = fresh()
        counts = (("readinessProbe", "policy", 2), ("requests.cpu", "profile", 3))
        metrics.record(answer(injection_counts=counts, applied=True), 0.001)
        metrics.record(answer(Outcome.DRY_RUN, injection_counts=counts[:1]), 0.001)
        found = samples(metrics)

        def injected(field: str, source: str, applied: str) -> float:
            labels = (("applied", applied), ("field", field), ("source", source))
            return found[("pod_tailor_injections_total", labels)]

        assert injected("requests.cpu", "profile", "true") == 3.0
        assert injected("readinessProbe", "policy", "true") == 2.0
        assert injected("readinessProbe", "policy", "false") == 2.0
        assert found[("pod_tailor_admission_requests_total", (("outcome", "dry-run"),))] == 1.0

    def test_an_error_counts_its_reason(self) -> None:
        metrics = fresh()
        metrics.record(answer(Outcome.ERROR, error=ErrorReason.ENGINE), 0.001)
        assert samples(metrics)[("pod_tailor_errors_total", (("reason", "engine_fault"),))] == 1.0


class TestSourcesAndTheVerdictCache:
    @pytest.mark.parametrize(
        ("basis", "kind"),
        [
            (Basis.HISTORY, "profile"),
            (Basis.POLICY, "policy"),
            (Basis.LIMIT_RANGE, "policy"),
            (Basis.HELD, "policy"),
        ],
    )
    def test_an_injection_is_told_apart_by_whether_history_sized_it(self, basis: Basis, kind: str) -> None:
        assert source_kind(Injection("app", "requests.cpu", "250m", "why", basis)) == kind

    def test_the_engine_s_own_wording_is_recognised_values_from_history_and_from_the_policy(self) -> None:
        from decimal import Decimal

        from tests.engine.podkit import container, pod, run
        from webhook.core.model.profile import Evidence, Recommendation

        rec = Recommendation(Decimal("0.3"), Decimal(2**28), Evidence("14d", 4000, 300.0, 95.0, 0.15, 0.9))
        subject = pod(container("app"), container("sidecar"))
        decision, _ = run(subject, profiles={"app": rec})
        counts = Verdict(Outcome.PATCHED, injections=decision.injections).injection_counts
        assert ("requests.cpu", "profile", 1) in counts
        assert ("requests.memory", "profile", 1) in counts
        assert ("requests.cpu", "policy", 1) in counts  # the sidecar, without a profile

    def test_cache_hits_misses_and_hits_decided_again_for_their_quota_are_exported(self) -> None:
        app = create_app(Settings(), State())
        cache: VerdictCache = app.state.verdict_cache
        cache.hits, cache.misses, cache.decided_again = 7, 3, 2
        found = samples(app.state.metrics)
        assert found[("pod_tailor_verdict_cache_lookups_total", (("result", "hit"),))] == 7.0
        assert found[("pod_tailor_verdict_cache_lookups_total", (("result", "miss"),))] == 3.0
        assert found[("pod_tailor_verdict_cache_resumed_total", ())] == 2.0
