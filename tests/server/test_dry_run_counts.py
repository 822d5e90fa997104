"""Dry-run made visible: what would have been injected, per namespace and field kind, in /metrics."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from tests.reviews import review_for
from webhook.admission import Answer, Outcome
from webhook.server.dryrun_counts import MAX_NAMESPACES, OTHER, DryRunCounts

from .conftest import RunningServer


def _values(collector: DryRunCounts) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value for f in collector.collect() for s in f.samples
    }


def _dry(namespace: str, *counts: tuple[str, int]) -> Answer:
    by_source = tuple((kind, "policy", count) for kind, count in counts)
    return Answer(200, b"{}", Outcome.DRY_RUN, namespace=namespace, injection_counts=by_source)


class TestTheCounters:
    def test_pods_and_values_are_counted_per_namespace_and_field(self) -> None:
        counts = DryRunCounts()
        counts.record(_dry("trial", ("requests.cpu", 2), ("readinessProbe", 1)))
        counts.record(_dry("trial", ("requests.cpu", 1)))
        counts.record(_dry("other", ("preStop", 1)))
        found = _values(counts)
        assert found[("pod_tailor_dry_run_pods_total", (("namespace", "trial"),))] == 2
        assert (
            found[
                ("pod_tailor_dry_run_injections_total", (("field", "requests.cpu"), ("namespace", "trial")))
            ]
            == 3
        )
        assert (
            found[("pod_tailor_dry_run_injections_total", (("field", "preStop"), ("namespace", "other")))]
            == 1
        )

    def test_namespaces_past_the_bound_count_as_other(self) -> None:
        counts = DryRunCounts()
        for index in range(MAX_NAMESPACES + 3):
            counts.record(_dry(f"ns-{index}", ("preStop", 1)))
        counts.record(_dry("ns-0", ("preStop", 1)))  # a known namespace keeps its own label
        assert len(counts.pods) == MAX_NAMESPACES + 1
        assert (counts.pods[OTHER], counts.pods["ns-0"]) == (3, 2)


def test_the_server_counts_a_dry_run_namespace_and_not_an_enforced_one(server: RunningServer) -> None:
    assert server.mutate(review_for(namespace="trial")).status_code == 200
    assert server.mutate(review_for(namespace="shop")).status_code == 200
    text = server.default_client.get("/metrics").text
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("pod_tailor_dry_run")
    }
    assert samples[("pod_tailor_dry_run_pods_total", (("namespace", "trial"),))] == 1
    assert (
        samples[("pod_tailor_dry_run_injections_total", (("field", "requests.cpu"), ("namespace", "trial")))]
        >= 1
    )
    assert not [key for key in samples if ("namespace", "shop") in key[1]]
