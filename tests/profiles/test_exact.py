"""The stored CPU statistic is the exact percentile it names, whatever the Pods' shapes.

Against a real Prometheus holding Pods that defeat a percentile rebuilt from each Pod's p95 and max:
replicas busy at disjoint hours and at different levels. The exact answer is computed from the values
the generator designed (each one a `rate()` point Prometheus sees, `synthetic.py`). The top fetch
alone: a floor under the percentile returns a few points and the exact value, a floor above it is
lowered and fetched again, a budget under one series cuts the window; reading the percentile off the
top is exact or declines, as a property.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import test_settings
from faultproxy import FaultProxy
from hypothesis import given, settings
from hypothesis import strategies as st
from promserver import PromServer, backfill
from synthetic import DAY, MIB, Observed, Pod, Workload, noise, quantile, write_openmetrics

from webhook.core.model.profile import Recommendation
from webhook.core.model.workload import WorkloadKey
from webhook.profiles.budgets import batch_budget
from webhook.profiles.build import BuildResult, build_profiles
from webhook.profiles.exact import TOLERANCE, Outcome, Pool, by_pod, from_top, needed, top_fetch
from webhook.profiles.prometheus import Prometheus
from webhook.profiles.strategy import StrategySettings

STEP = 300
END = (1_790_000_000 // DAY) * DAY + 7 * 3600
START = END - 6 * DAY
HOUR = 3600


def _replicas(*specs: tuple[float, float], seed: int):  # type: ignore[no-untyped-def]
    """Replica i busy `specs[i][0]` hours a day from its own start at `specs[i][1]` cores, else idle:
    Pods started apart are busy at disjoint hours. (`write_openmetrics` offsets each Pod's k by 7919;
    6 days at 5 minutes keep k under 1,800.)"""

    def shape(k: int, t: int, age: int) -> tuple[float, float]:
        hours, level = specs[k // 7919]
        if age % DAY < hours * HOUR:
            return level * (1 + 0.3 * noise(seed, k)), 300 * MIB
        return 0.1 + 0.02 * noise(seed + 1, k), 200 * MIB

    return shape


def _pods(name: str, starts: list[int]) -> list[Pod]:
    suffixes = ("bx2kd", "cx2kf", "dx2kg")
    return [Pod(f"{name}-7d4b9c8f6-{suffixes[i]}", START + offset, END) for i, offset in enumerate(starts)]


def _workloads() -> list[Workload]:
    return [
        # Three replicas started 8 hours apart, busy 1, 1 and 6 hours a day: disjoint busy hours, and
        # two replicas whose own p95 is idle while their busy hour is above the pooled p95.
        Workload("mix", "Deployment", "shards", {"app": _replicas((1, 1.5), (1, 1.5), (6, 1.0), seed=11)},
                 _pods("shards", [0, 8 * HOUR, 16 * HOUR])),
        # Replicas at different levels: two busy an hour a day at 1.5 cores, one 20 hours at 0.3.
        Workload("mix", "Deployment", "uneven",
                 {"app": _replicas((1.1, 1.5), (1.1, 1.5), (20, 0.3), seed=21)}, _pods("uneven", [0, 0, 0])),
    ]


@dataclass(frozen=True)
class Mix:
    server: PromServer
    observed: Observed


@pytest.fixture(scope="module")
def mix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mix]:
    root = tmp_path_factory.mktemp("mix")
    source = root / "history.om"
    with source.open("w") as out:
        observed = write_openmetrics(_workloads(), out, step=STEP)
    backfill(source, root / "data")
    source.unlink()
    with PromServer(root / "data") as server:
        yield Mix(server, observed)


def _build(mix: Mix, **overrides: object) -> BuildResult:
    strategy = StrategySettings(**overrides.pop("strategy", {}))  # type: ignore[arg-type]
    prom = Prometheus(mix.server.url)
    try:
        return build_profiles(prom, test_settings(namespaces=("mix",), window="6d", strategy=strategy,
                                                  **overrides), end=END)
    finally:
        prom.close()


def _stored(result: BuildResult, name: str) -> float:
    entry = result.document.workloads[WorkloadKey("mix", "Deployment", name)]
    profile = entry.containers["app"]
    assert isinstance(profile, Recommendation)
    assert profile.evidence.cpu_value is not None
    return profile.evidence.cpu_value


def _per_pod(observed: Observed, name: str, pods: int, q: float) -> float:
    """The largest per-Pod quantile: `write_openmetrics` appends each Pod's values in turn."""
    values = observed.cpu[(f"mix/Deployment/{name}", "app")]
    size = len(values) // pods
    return max(quantile(values[i * size:(i + 1) * size], q) for i in range(pods))


@pytest.fixture(scope="module")
def exact_build(mix: Mix) -> BuildResult:
    return _build(mix)


@pytest.fixture(scope="module")
def rebuilt(mix: Mix) -> BuildResult:
    return _build(mix, exact_cpu=False)


def test_the_stored_cpu_is_the_exact_pooled_p95_where_a_p95_and_max_rebuild_is_off(
    mix: Mix, exact_build: BuildResult, rebuilt: BuildResult
) -> None:
    exact = quantile(mix.observed.cpu[("mix/Deployment/shards", "app")], 0.95)
    assert abs(_stored(exact_build, "shards") / exact - 1) <= TOLERANCE
    assert abs(_stored(rebuilt, "shards") / exact - 1) > 0.03  # disjoint busy hours defeat the rebuild


def test_replicas_at_different_levels_are_exact_too(mix: Mix, exact_build: BuildResult) -> None:
    exact = quantile(mix.observed.cpu[("mix/Deployment/uneven", "app")], 0.95)
    assert abs(_stored(exact_build, "uneven") / exact - 1) <= TOLERANCE


def test_the_evidence_names_the_statistic_its_resolution_and_bracket(exact_build: BuildResult) -> None:
    profile = exact_build.document.workloads[WorkloadKey("mix", "Deployment", "uneven")].containers["app"]
    assert isinstance(profile, Recommendation)
    evidence = profile.evidence
    assert (evidence.cpu_aggregate, evidence.cpu_step, evidence.cpu_rate_window) == ("pooled", "5m", "10m")
    assert evidence.cpu_within is not None
    assert evidence.cpu_within <= TOLERANCE


def test_max_per_pod_is_the_exact_largest_pod_percentile(mix: Mix) -> None:
    result = _build(mix, strategy={"cpu_aggregate": "maxPerPod"})
    for name in ("shards", "uneven"):
        exact = _per_pod(mix.observed, name, 3, 0.95)
        assert abs(_stored(result, name) / exact - 1) <= TOLERANCE
    pooled = quantile(mix.observed.cpu[("mix/Deployment/shards", "app")], 0.95)
    assert _per_pod(mix.observed, "shards", 3, 0.95) > pooled * 1.005  # they differ on this data


@pytest.mark.parametrize("percentile", [50.0, 90.0, 99.0])
def test_other_percentiles_are_exact_too(mix: Mix, percentile: float) -> None:
    result = _build(mix, strategy={"cpu_percentile": percentile})
    exact = quantile(mix.observed.cpu[("mix/Deployment/shards", "app")], percentile / 100)
    assert abs(_stored(result, "shards") / exact - 1) <= TOLERANCE


# --------------------------------------------------------------------------- what it costs Prometheus


SERIES_POINTS = 6 * DAY // STEP  # the points one series of the mix holds at the build's step: 1,728


@pytest.mark.parametrize("concurrency", [1, 2])
def test_the_top_fetchs_batches_in_flight_hold_half_of_one_querys_budget_together(
    mix: Mix, tmp_path: Path, concurrency: int
) -> None:
    """Where Prometheus' heap peaks: each batch (its count and its filter) holds at most
    max_samples / (2 x concurrency) points, as Prometheus counts them (besides, while it counts or
    filters them, one series' points again). Against a server that refuses a pool's three series
    over the whole window (what two batches in flight under one query's budget would ask), the
    batches take half of it each and none is refused."""
    budget = 7 * SERIES_POINTS // 2 * concurrency
    settings = test_settings(max_samples=budget, concurrency=concurrency)
    assert SERIES_POINTS <= batch_budget(settings) < 2 * SERIES_POINTS
    copy = tmp_path / "data"
    shutil.copytree(mix.server.data_dir, copy, ignore=shutil.ignore_patterns("lock", "wal", "chunks_head"))
    # Refuses a pool's three series over the whole window (and, counting them, one again).
    with PromServer(copy, max_samples=3 * SERIES_POINTS) as limited, \
            FaultProxy(limited.url, lambda _: None) as proxy:
        prom = Prometheus(proxy.url)
        try:
            result = build_profiles(prom, test_settings(namespaces=("mix",), window="6d", max_samples=budget,
                                                        concurrency=concurrency), end=END)
        finally:
            prom.close()
    peaks = [peak for _, query, peak in proxy.answered if "count_over_time(rate(" in query or ") > " in query]
    assert len(peaks) >= 2 * 2 * 2  # two pools, each counted and filtered over two spans
    span_points = SERIES_POINTS // 2
    assert max(peaks) <= batch_budget(settings) + span_points
    assert result.refusals == 0
    for name in ("shards", "uneven"):
        exact = quantile(mix.observed.cpu[(f"mix/Deployment/{name}", "app")], 0.95)
        assert abs(_stored(result, name) / exact - 1) <= TOLERANCE


# --------------------------------------------------------------------------- the top fetch alone


def _fetch(mix: Mix, name: str, *, floor: float, budget: int = 500_000) -> tuple[float | None, Outcome]:
    """The top fetch of one workload's pooled points from the mix server, at the build's resolution
    (5-minute data: a 5-minute step, a 10-minute rate window), with `floor` as its first floor."""
    pods = sorted({pod.name for wl in _workloads() if wl.name == name for pod in wl.pods})
    series = tuple(("mix", pod, "app") for pod in pods)
    prom = Prometheus(mix.server.url)
    said: list[str] = []
    try:
        with ThreadPoolExecutor(2) as executor:
            outcome = top_fetch(
                prom, [Pool(name, series, floor)], q=0.95, window=(END - 6 * DAY, END), step=STEP,
                rate_window=2 * STEP, recorded=None, budget=budget, interval=STEP,
                lives=dict.fromkeys(series, 6.0 * DAY), neighbours=by_pod(series), max_query_bytes=16_000,
                pool_executor=executor, progress=said.append,
            )
    finally:
        prom.close()
    return outcome.values.get(name), outcome


@pytest.mark.parametrize("name", ["shards", "uneven"])
def test_a_floor_under_the_percentile_returns_only_the_top_and_the_exact_value(mix: Mix, name: str) -> None:
    exact = quantile(mix.observed.cpu[(f"mix/Deployment/{name}", "app")], 0.95)
    value, outcome = _fetch(mix, name, floor=0.95 * exact)
    assert value is not None
    assert abs(value / exact - 1) <= 1e-3
    assert outcome.refetched == 0
    assert outcome.points < 0.2 * outcome.total


def test_a_floor_above_the_percentile_is_lowered_for_that_pool_and_fetched_again(mix: Mix) -> None:
    exact = quantile(mix.observed.cpu[("mix/Deployment/shards", "app")], 0.95)
    value, outcome = _fetch(mix, "shards", floor=4 * exact)
    assert outcome.refetched >= 1
    assert value is not None
    assert abs(value / exact - 1) <= 1e-3


def test_a_pool_short_of_points_is_fetched_again_only_in_the_band_under_its_floor(mix: Mix) -> None:
    """No count asked again, no point fetched twice: the rounds together fetch what one fetch at the
    last floor would have, and each round after the first is one query (one batch, one span)."""
    exact = quantile(mix.observed.cpu[("mix/Deployment/shards", "app")], 0.95)
    value, outcome = _fetch(mix, "shards", floor=4 * exact)
    assert outcome.rounds >= 2
    assert outcome.queries == 2 + (outcome.rounds - 1)
    once, at_last = _fetch(mix, "shards", floor=outcome.floors["shards"])
    assert at_last.rounds == 1
    assert outcome.points == at_last.points
    assert value == once


def test_a_budget_smaller_than_one_series_cuts_the_window_into_spans_that_add_up(mix: Mix) -> None:
    exact = quantile(mix.observed.cpu[("mix/Deployment/shards", "app")], 0.95)
    value, outcome = _fetch(mix, "shards", floor=0.9 * exact, budget=600)  # a series: ~1,700 points
    assert outcome.queries >= 2 * 3 * 3
    assert value is not None
    assert abs(value / exact - 1) <= 1e-3


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0.0, 8.0, allow_nan=False), min_size=1, max_size=300),
    st.sampled_from([0.5, 0.9, 0.95, 0.99, 1.0]),
    st.floats(0.0, 9.0),
)
def test_the_percentile_read_off_the_top_is_the_exact_one_or_nothing(
    values: list[float], q: float, floor: float
) -> None:
    """Whatever the floor: with enough points above it, exactly the percentile of all of them
    (Prometheus' definition); with too few, no answer rather than a wrong one."""
    top = [v for v in values if v > floor]
    found = from_top(top, total=len(values), q=q)
    if len(top) >= needed(len(values), q):
        assert found is not None
        assert math.isclose(found, quantile(values, q), rel_tol=1e-12, abs_tol=1e-12)
    else:
        assert found is None
