"""Drawable summaries from the real Prometheus: a day's shape and a distribution per container, cheaply."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest
import scenarios
from conftest import History, test_settings
from kubefake import FakeKube

from webhook.cluster.config import discover
from webhook.core.model.workload import WorkloadKey
from webhook.profiles import queries
from webhook.profiles.build import BuildResult, build_profiles
from webhook.profiles.identity import Owners
from webhook.profiles.kubestore import KubeStore
from webhook.profiles.prometheus import Prometheus
from webhook.profiles.store import ProfileDocument, WorkloadEntry, decode_document, encode_document
from webhook.profiles.summarize import summarize
from webhook.profiles.summary import QUANTILES, UsageSummary

MIB = 2**20


@pytest.fixture(scope="module")
def summarized(history: History) -> Iterator[BuildResult]:
    prom = Prometheus(history.prometheus.url)
    try:
        yield build_profiles(prom, test_settings(namespaces=("shop",), summary_days=7), end=scenarios.END)
    finally:
        prom.close()


def _summary(result: BuildResult, kind: str, name: str, container: str = "app") -> UsageSummary:
    return result.document.workloads[WorkloadKey("shop", kind, name)].summaries[container]


class TestWhatTheSummariesSay:
    def test_a_daily_cycle_peaks_and_dips_at_its_hours(self, summarized: BuildResult) -> None:
        diurnal = _summary(summarized, "Deployment", "diurnal")
        cpu = [v or 0.0 for v in diurnal.cpu_by_hour]
        assert cpu.index(max(cpu)) in (5, 6, 7)
        assert cpu.index(min(cpu)) in (17, 18, 19)
        assert max(cpu) == pytest.approx(0.92, abs=0.08)
        memory = [v or 0.0 for v in diurnal.memory_by_hour]
        assert memory.index(max(memory)) in (5, 6, 7)

    def test_quantiles_rise_and_sit_where_the_usage_is(self, summarized: BuildResult) -> None:
        steady = _summary(summarized, "Deployment", "steady")
        values = [steady.cpu[q] for q in QUANTILES]
        assert values == sorted(values)
        assert 0.2 <= steady.cpu["p50"] <= steady.cpu["max"] <= 0.25
        assert 200 * MIB <= steady.memory["p50"] <= steady.memory["max"] <= 210 * MIB
        assert steady.samples == 7 * 24

    @pytest.mark.parametrize(
        ("kind", "name", "containers"),
        [
            ("Deployment", "checkout", {"app", "envoy"}),
            ("StatefulSet", "db", {"postgres"}),
            ("CronJob", "nightly", {"job"}),
            ("Deployment", "jvm", {"app"}),
        ],
    )
    def test_every_controllers_pods_pool_into_its_workload(
        self, summarized: BuildResult, kind: str, name: str, containers: set[str]
    ) -> None:
        assert set(summarized.document.workloads[WorkloadKey("shop", kind, name)].summaries) == containers

    def test_the_pass_costs_a_query_a_day_once_the_first_answers_say_the_fleet_is_small(
        self, summarized: BuildResult, built: BuildResult
    ) -> None:
        # The first day starts with 6 hours, as a large fleet's must (a day parsed whole held too much
        # at 2,000 workloads); the other days wait for that answer: the rest of the first day, and
        # every later day, in one; a query for CPU and one for memory each time.
        assert summarized.queries == built.queries + 2 * (2 + 6)


class TestTheStore:
    def test_summaries_survive_the_store_to_three_digits(self, summarized: BuildResult) -> None:
        again = decode_document(json.loads(json.dumps(encode_document(summarized.document))), where="test")
        before, after = (
            _summary(summarized, "Deployment", "diurnal"),
            (again.workloads[WorkloadKey("shop", "Deployment", "diurnal")].summaries["app"]),
        )
        assert after.cpu["p95"] == pytest.approx(before.cpu["p95"], rel=0.01, abs=0.001)
        assert list(after.cpu_by_hour) == [pytest.approx(b, rel=0.005) for b in before.cpu_by_hour]
        assert after.memory["max"] == pytest.approx(before.memory["max"], abs=1024)

    def test_a_store_without_summaries_still_loads(self, built: BuildResult) -> None:
        data = encode_document(built.document)
        assert all("summaries" not in item for item in data["workloads"].values())
        assert all(not e.summaries for e in decode_document(data, where="old").workloads.values())

    def test_an_unreadable_summary_is_left_out_and_the_profiles_load(self, summarized: BuildResult) -> None:
        data = encode_document(summarized.document)
        data["workloads"]["shop/Deployment/steady"]["summaries"]["app"]["cpuByHour"] = "broken"
        loaded = decode_document(data, where="test").workloads[WorkloadKey("shop", "Deployment", "steady")]
        assert "app" not in loaded.summaries
        assert "app" in loaded.containers

    def test_the_largest_namespace_of_the_scale_bench_fits_one_configmap_with_room(
        self, summarized: BuildResult, tmp_path: Path
    ) -> None:
        """bench/profiles.py puts 50 Deployments x 3 containers in a namespace; give each a summary."""
        entry = summarized.document.workloads[WorkloadKey("shop", "Deployment", "checkout")]
        summary, profile = entry.summaries["app"], entry.containers["app"]
        names = ("a", "b", "c")
        workloads = {
            WorkloadKey("team-00", "Deployment", f"w-{i:04d}"): WorkloadEntry(
                dict.fromkeys(names, profile), summaries=dict.fromkeys(names, summary)
            )
            for i in range(50)
        }
        with FakeKube() as kube:
            found = discover(kubeconfig=str(kube.write_kubeconfig(tmp_path / "kubeconfig")))
            assert found.config is not None
            store = KubeStore(found.config.api_client, namespace="pod-tailor")
            store.write(ProfileDocument(workloads, 0.0, "bench", "14d"))
            configmap = kube.get("configmaps", "profiles-team-00", namespace="pod-tailor")
            assert configmap is not None
            assert len(json.dumps(configmap)) < 300 * 1024
            assert len(store.read().workloads) == 50


class TestTheBudget:
    @pytest.mark.parametrize(("series", "budget", "asked"), [
        # A query for CPU and one for memory per piece:
        (0.0, 0, 2 * (2 + 6)),  # unknown: a first piece of 6 hours, then the rest of that day in one
        (20.0, 4_000, 2 * 7 * 4),  # 6 hours x 20 series: 120 series-steps, 3 % of the budget: four a day
        (1_000.0, 1_000, 2 * 7 * 24),  # not even an hour under 3 % of it: an hour at a time
    ])
    def test_each_piece_holds_at_most_a_share_of_the_queries_budget_and_answers_the_same(
        self, history: History, series: float, budget: int, asked: int
    ) -> None:
        prom = Prometheus(history.prometheus.url)
        try:
            owners = Owners.from_labels(prom.series(queries.owner_series(("shop",)),
                                                    start=scenarios.END - 14 * 86_400, end=scenarios.END))
            whole = summarize(prom, namespaces=("shop",), rate_window=600, recorded=None, owners=owners,
                              end=scenarios.END, days=7, progress=lambda _: None, interval=300.0)
            before = prom.queries
            pieces = summarize(prom, namespaces=("shop",), rate_window=600, recorded=None, owners=owners,
                               end=scenarios.END, days=7, progress=lambda _: None, interval=300.0,
                               series=series, budget=budget)
            assert prom.queries - before == asked
            # Equal to the float, but for the order Prometheus averages the Pods in (a hash map's).
            mine, theirs = _flat(pieces), _flat(whole)
            assert mine.keys() == theirs.keys()
            assert {k: v for k, v in mine.items() if isinstance(v, str)} == {
                k: v for k, v in theirs.items() if isinstance(v, str)}
            numbers = [k for k, v in theirs.items() if not isinstance(v, str)]
            assert [mine[k] for k in numbers] == pytest.approx([theirs[k] for k in numbers], rel=1e-12,
                                                               nan_ok=True)
        finally:
            prom.close()


    def test_asked_one_day_at_a_time_the_summaries_are_the_same_in_as_many_queries(
        self, history: History
    ) -> None:
        prom = Prometheus(history.prometheus.url)
        try:
            owners = Owners.from_labels(prom.series(queries.owner_series(("shop",)),
                                                    start=scenarios.END - 14 * 86_400, end=scenarios.END))
            asked = []
            for parallel in (2, 1):
                before = prom.queries
                found = summarize(prom, namespaces=("shop",), rate_window=600, recorded=None, owners=owners,
                                  end=scenarios.END, days=7, progress=lambda _: None, interval=300.0,
                                  parallel=parallel)
                asked.append((prom.queries - before, _flat(found)))
        finally:
            prom.close()
        (two, both), (one, alone) = asked
        assert one == two
        assert both.keys() == alone.keys()
        numbers = [k for k, v in both.items() if not isinstance(v, str)]
        assert [alone[k] for k in numbers] == pytest.approx([both[k] for k in numbers], rel=1e-12,
                                                            nan_ok=True)


def _flat(found: object, path: str = "") -> dict[str, object]:
    """Every number and word of the summaries by its path (an hour without data: NaN)."""
    if dataclasses.is_dataclass(found) and not isinstance(found, type):
        found = dataclasses.asdict(found)
    if isinstance(found, dict):
        return {k: v for key, value in found.items() for k, v in _flat(value, f"{path}/{key}").items()}
    if isinstance(found, list | tuple):
        return {k: v for n, value in enumerate(found) for k, v in _flat(value, f"{path}[{n}]").items()}
    return {path: math.nan if found is None else found}
