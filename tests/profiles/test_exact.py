"""The stored CPU statistic is the exact percentile it names, whatever the Pods' shapes.

Against a real Prometheus holding Pods that defeat a percentile rebuilt from each Pod's p95 and max:
replicas busy at disjoint hours and at different levels. The exact answer is computed from the values
the generator designed (each one a `rate()` point Prometheus sees, `synthetic.py`), and the brackets'
guarantee is checked as a property of the counting rounds alone (values known whole, no server).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from conftest import test_settings
from hypothesis import given, settings
from hypothesis import strategies as st
from promserver import PromServer, backfill
from synthetic import DAY, MIB, Observed, Pod, Workload, noise, quantile, write_openmetrics

from webhook.core.profile import Recommendation
from webhook.core.workload import WorkloadKey
from webhook.profiles.build import BuildResult, build_profiles
from webhook.profiles.exact import TOLERANCE, Bracket, Pool, digits_for, refine
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


# --------------------------------------------------------------------------- the rounds alone


def test_packed_counts_fit_a_float_exactly() -> None:
    for points in (288, 1440, 5760, 10_080):
        base, digits = digits_for(points)
        assert base > points
        assert base**digits <= 2**53 < base ** (digits + 1)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.floats(0.0, 8.0, allow_nan=False), min_size=1, max_size=120),
             min_size=1, max_size=5),
    st.sampled_from([0.5, 0.9, 0.95, 0.99]),
    st.floats(0.3, 3.0),
)
def test_rounds_bracket_the_exact_quantile_within_the_tolerance(
    pods: list[list[float]], q: float, misestimate: float
) -> None:
    """Whatever the values and however wrong the first estimate, the answer is within the tolerance
    of the exact pooled quantile (values known whole: counted without a server)."""
    pooled = [v for values in pods for v in values]
    exact = quantile(pooled, q)
    bracket = Bracket(estimate=max(exact * misestimate, 1e-3), ceiling=max(pooled))
    with ThreadPoolExecutor(1) as executor:
        refine(None, [Pool("c", (), tuple(pooled))], {"c": bracket}, q=q, window=(0.0, 86_400.0),  # type: ignore[arg-type]
               step=60, rate_window=120, recorded=None, budget=1000, max_query_bytes=1000,
               pool_executor=executor, progress=lambda _: None)
    lo, hi = bracket.bounds(q)
    assert lo <= exact <= hi
    if bracket.settled(q) and exact > 1e-3:
        assert math.isclose(bracket.value(q), exact, rel_tol=TOLERANCE, abs_tol=1e-6)
