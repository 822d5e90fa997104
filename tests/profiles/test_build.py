"""Recommendations built from a real, backfilled Prometheus match the analytic value of each shape.

Tolerances: CPU is the pooled percentile of the usage values Prometheus sees, within 3 % (the
mixture of per-Pod quantiles is exact for alike replicas; diurnal and churned Pods differ a little)
plus the 5m rounding step; memory is the exact peak x margin, rounded up to the next MiB.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
import scenarios
from agreement import CPU_STEP, assert_agrees
from conftest import History, test_settings
from synthetic import MIB, RECORDED_CPU, quantile

from webhook.core.model.profile import NoRecommendation, Recommendation
from webhook.core.model.workload import WorkloadKey
from webhook.profiles.build import BuildResult, build_profiles
from webhook.profiles.prometheus import Prometheus
from webhook.profiles.slices import auto_slices


def _profile(built: BuildResult, kind: str, name: str, container: str = "app") -> Recommendation:
    entry = built.document.workloads[WorkloadKey("shop", kind, name)]
    profile = entry.containers[container]
    assert isinstance(profile, Recommendation), profile
    return profile


def _cpu_expected(history: History, key: str, container: str = "app") -> float:
    return quantile(history.observed.cpu[(key, container)], 0.95)


def _memory_expected(history: History, key: str, *, factor: float = 1.15, container: str = "app") -> float:
    return max(history.observed.memory[(key, container)]) * factor


@pytest.mark.parametrize(
    ("kind", "name", "container"),
    [
        ("Deployment", "steady", "app"),
        ("Deployment", "diurnal", "app"),
        ("Deployment", "spiky", "app"),
        ("Deployment", "jvm", "app"),
        ("Deployment", "growing", "app"),
        ("Deployment", "checkout", "app"),
        ("Deployment", "checkout", "envoy"),
        ("StatefulSet", "db", "postgres"),
        ("CronJob", "nightly", "job"),
    ],
)
def test_cpu_request_is_the_p95_of_the_pooled_usage(
    history: History, built: BuildResult, kind: str, name: str, container: str
) -> None:
    expected = _cpu_expected(history, f"shop/{kind}/{name}", container)
    got = float(_profile(built, kind, name, container).cpu)
    assert expected * 0.97 <= got <= expected * 1.03 + float(CPU_STEP), (got, expected)


@pytest.mark.parametrize(
    ("kind", "name", "container"),
    [
        ("Deployment", "steady", "app"),
        ("Deployment", "diurnal", "app"),
        ("Deployment", "spiky", "app"),
        ("Deployment", "growing", "app"),
        ("Deployment", "checkout", "app"),
        ("Deployment", "checkout", "envoy"),
        ("StatefulSet", "db", "postgres"),
    ],
)
def test_memory_request_is_the_peak_plus_15_percent(
    history: History, built: BuildResult, kind: str, name: str, container: str
) -> None:
    expected = _memory_expected(history, f"shop/{kind}/{name}", container=container)
    got = float(_profile(built, kind, name, container).memory)
    assert expected <= got < expected + MIB, (got / MIB, expected / MIB)


def test_slow_memory_growth_is_sized_from_the_latest_peak_not_the_average(built: BuildResult) -> None:
    got = _profile(built, "Deployment", "growing").memory
    assert got >= Decimal(400 * MIB) * Decimal("1.15") - MIB


def test_an_oom_killed_container_gets_at_least_the_vpa_bump(history: History, built: BuildResult) -> None:
    profile = _profile(built, "Deployment", "oomy")
    peak = max(history.observed.memory[("shop/Deployment/oomy", "app")])
    expected = max(peak * 1.15, peak * 1.2, peak + 100 * MIB)
    assert profile.evidence.oom_kills == 1
    assert expected <= float(profile.memory) < expected + MIB
    assert float(profile.memory) >= peak + 100 * MIB


def test_the_jvm_start_up_spike_is_recorded_without_raising_the_steady_request(built: BuildResult) -> None:
    profile = _profile(built, "Deployment", "jvm")
    assert profile.startup_cpu == Decimal("2")
    assert profile.cpu < Decimal("0.4")
    # The spike ends SPIKE_AGE s after the start; rate() over two 5m steps sees it up to two steps late.
    assert profile.startup_seconds is not None
    assert scenarios.SPIKE_AGE <= profile.startup_seconds <= scenarios.SPIKE_AGE + 2 * scenarios.STEP


def test_steady_workloads_record_start_up_cpu_but_no_start_up_phase(built: BuildResult) -> None:
    profile = _profile(built, "Deployment", "steady")
    assert profile.startup_seconds is None


def test_a_brand_new_workload_gets_no_recommendation_with_the_reason(built: BuildResult) -> None:
    profile = built.document.workloads[WorkloadKey("shop", "Deployment", "fresh")].containers["app"]
    assert isinstance(profile, NoRecommendation)
    hours = re.search(r"only (\d+\.\d)h and (\d+) samples", profile.reason)
    assert hours is not None, profile.reason
    assert 1.85 <= float(hours[1]) <= 2.05  # 24 samples 5 minutes apart: 23 intervals
    assert int(hours[2]) == 24
    assert "needs 24h" in profile.reason


def test_pods_of_every_replicaset_hash_pool_into_one_deployment(built: BuildResult) -> None:
    names = {key.name for key in built.document.workloads if key.kind == "Deployment"}
    assert "checkout" in names
    assert not any(name.startswith("checkout-") for name in names)
    evidence = _profile(built, "Deployment", "checkout").evidence
    assert 335 <= evidence.hours <= 336  # the union of 44 churned Pods' lives covers the whole window
    assert evidence.samples > 4 * 4000  # four replicas' samples all count


@pytest.mark.parametrize(
    ("kind", "name"),
    [("Deployment", "steady"), ("StatefulSet", "db"), ("CronJob", "nightly"), ("Deployment", "checkout")],
)
def test_workloads_are_identified_like_the_admission_side_does(
    built: BuildResult, kind: str, name: str
) -> None:
    assert WorkloadKey("shop", kind, name) in built.document.workloads


def test_evidence_names_window_percentile_margin_and_confidence(built: BuildResult) -> None:
    evidence = _profile(built, "Deployment", "steady").evidence
    assert (evidence.window, evidence.cpu_percentile, evidence.memory_margin) == ("14d", 95.0, 0.15)
    assert 0.9 < evidence.confidence <= 1.0
    assert evidence.samples == 2 * 4032


def test_current_requests_come_from_kube_state_metrics(built: BuildResult) -> None:
    entry = built.document.workloads[WorkloadKey("shop", "Deployment", "checkout")]
    assert entry.current["app"] == {"cpu": Decimal("1.0"), "memory": Decimal(1024 * MIB)}


def test_a_build_takes_a_handful_of_queries_whatever_the_number_of_pods(built: BuildResult) -> None:
    pods = 2 + 2 + 3 + 14 + 1 + 2 + 1 + 44 + 2 + 14
    assert built.series > pods
    # 9, one for what HPAs scale, one for their totals (profiles.totals), one for the interval where
    # the window starts (a long-term store downsamples older data: `profiles.resolution`)
    # ... and the exact CPU statistic's top fetch (`profiles.exact`): a count and a fetch per batch of
    # pools whose floors are alike (one batch per 5 % band of usage levels here: ten workloads at
    # different levels, and one for the pools too short-lived for a point on the passes' coarser grid,
    # asked whole), never per Pod.
    workloads = len(built.document.workloads)
    assert built.queries <= 12 + 2 * (workloads + 1)
    assert built.queries < pods


def test_a_build_that_hits_max_samples_splits_the_window_and_agrees(
    history: History, built: BuildResult, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # A second server over a copy of the same blocks, with a sample limit the full window exceeds.
    import shutil

    from promserver import PromServer

    copy = tmp_path_factory.mktemp("limited") / "data"
    shutil.copytree(history.data_dir, copy, ignore=shutil.ignore_patterns("lock", "wal", "chunks_head"))
    with PromServer(copy, max_samples=60_000) as server:
        prom = Prometheus(server.url)
        split = build_profiles(prom, test_settings(namespaces=("shop",)), end=scenarios.END)
        prom.close()
    assert split.queries > built.queries
    assert_agrees(split, built)


def test_a_recorded_cpu_rate_gives_the_same_profiles_as_the_counter(
    history: History, built: BuildResult
) -> None:
    prom = Prometheus(history.prometheus.url)
    recorded = build_profiles(
        prom, test_settings(namespaces=("shop",), cpu_rate_metric=RECORDED_CPU), end=scenarios.END
    )
    prom.close()
    for key, entry in built.document.workloads.items():
        for container, profile in entry.containers.items():
            other = recorded.document.workloads[key].containers[container]
            if isinstance(profile, Recommendation):
                assert isinstance(other, Recommendation)
                assert (other.cpu, other.memory) == (profile.cpu, profile.memory), (key, container)
                assert other.startup_cpu == profile.startup_cpu, (key, container)


def test_a_build_cut_into_slices_from_the_start_agrees(history: History, built: BuildResult) -> None:
    prom = Prometheus(history.prometheus.url)
    sliced = build_profiles(prom, test_settings(namespaces=("shop",), slices=3), end=scenarios.END)
    prom.close()
    # Two more slices of the two big queries; the top fetch's batches follow the floors, which the
    # slices' merged estimates move a little: a band or two either way (two queries each).
    assert abs(sliced.queries - (built.queries + 4)) <= 4
    assert_agrees(sliced, built, hours_within=0.2)


@pytest.mark.parametrize(
    ("series", "interval", "expected"),
    [
        (18_000, 60.0, 10),  # the 1-minute benchmark: 18,000 live series, 363 M samples a pass
        (18_000, 300.0, 2),
        (1_000, 60.0, 1),  # a small cluster: one query for the whole window
        (0, 60.0, 1),  # nothing live: nothing to size by
        (10_000_000, 15.0, 336),  # at most one slice per hour of the window
    ],
)
def test_the_big_passes_are_cut_to_stay_under_the_sample_budget(
    series: int, interval: float, expected: int
) -> None:
    assert auto_slices(series=series, window=14 * 86_400, interval=interval,
                       samples_per_query=40_000_000) == expected
