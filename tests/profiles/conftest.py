"""One real Prometheus per test session, backfilled with the synthetic cluster of `scenarios.py`."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# The helpers here (synthetic, promserver, scenarios) and tests/kubefake.py, however pytest imports tests.
for _path in (Path(__file__).parent, Path(__file__).parents[1]):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import scenarios  # noqa: E402
from promserver import PromServer, backfill  # noqa: E402
from synthetic import Observed, write_openmetrics  # noqa: E402

from webhook.profiles.build import BuildResult, BuildSettings, build_profiles  # noqa: E402
from webhook.profiles.prometheus import Prometheus  # noqa: E402
from webhook.profiles.strategy import StrategySettings  # noqa: E402


@dataclass(frozen=True)
class History:
    prometheus: PromServer
    observed: Observed
    data_dir: Path


def test_settings(**overrides: object) -> BuildSettings:
    """The build settings matching the synthetic data: 5-minute steps, a rate over two of them."""
    strategy = StrategySettings(startup_window_seconds=scenarios.STARTUP_WINDOW)
    values: dict[str, object] = {
        "window": "14d", "step": "5m", "rate_window": "10m", "coverage_step": "5m",
        "startup_lookback": "14d",
        "summary_days": 0,  # the drawable summaries' pass is tested on its own (test_summaries.py)
        # The whole synthetic history (~520 k samples a pass) in one query, as the query counts below
        # assume; splitting under a budget is tested with budgets of its own (test_gentle_builds.py).
        "max_samples": 1_000_000,
        "strategy": strategy,
    }
    values.update(overrides)
    return BuildSettings(**values)  # type: ignore[arg-type]


test_settings.__test__ = False  # type: ignore[attr-defined]

# `pod-tailor profiles build` over the synthetic history as test_settings builds it, the rate window
# and the output options left to each test.
BUILD_COMMAND = ("profiles", "build", "--namespace", "shop", "--step", "5m",
                 "--startup-window", str(scenarios.STARTUP_WINDOW), "--startup-lookback", "14d")  # fmt: skip


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`profiles build` keeps its checkpoint under $XDG_CACHE_HOME: a fresh one per test, never ~/.cache."""
    cache = tmp_path_factory.mktemp("xdg-cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv("POD_TAILOR_CHECKPOINT", raising=False)
    return cache


@pytest.fixture(scope="session")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    root = tmp_path_factory.mktemp("prometheus")
    source = root / "history.om"
    with source.open("w") as out:
        observed = write_openmetrics(scenarios.workloads(), out, step=scenarios.STEP)
    backfill(source, root / "data")
    source.unlink()
    with PromServer(root / "data") as server:
        yield History(server, observed, root / "data")


@pytest.fixture(scope="session")
def built(history: History) -> BuildResult:
    """The default build over all namespaces except the one wired to fail (`partial`)."""
    prom = Prometheus(history.prometheus.url)
    try:
        return build_profiles(prom, test_settings(namespaces=("shop",)), end=scenarios.END)
    finally:
        prom.close()
