"""Builds plan by the points a query materialises and never read finer than the data.

One real Prometheus whose `--query.max-samples` is set low, holding namespaces scraped every 15 s,
60 s and 300 s, and one whose older day was downsampled to 5 minutes (as Thanos, Mimir and
VictoriaMetrics keep older data) while its last day is at 1 minute. Each build must stay under its
budget without a refusal, read at a step no finer than the data (`profiles.resolution`), and store the
exact percentile of the points at that step, computed here from raw `query_range` answers. By
default the step is the rate window (tiles), at least a minute; an explicit one wins. Start-ups are
read through the default 5-minute start-up window at every interval, 5 minutes too (a rate needs two
samples: its first point comes after that window), and one the window cannot show is said.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal

import httpx
import pytest
from conftest import test_settings
from hypothesis import given
from hypothesis import strategies as st
from promserver import PromServer, backfill
from synthetic import DAY, MIB, Pod, Workload, noise, quantile, write_openmetrics
from vmserver import VmServer

from webhook.core.model.profile import Recommendation
from webhook.core.model.workload import WorkloadKey
from webhook.profiles.build import BuildResult, build_profiles
from webhook.profiles.exact import TOLERANCE
from webhook.profiles.prometheus import Prometheus
from webhook.profiles.resolution import FLOOR, choose, nice_interval, points
from webhook.profiles.strategy import StrategySettings

END = (1_790_000_000 // DAY) * DAY + 5 * 3600
QUERY_MAX_SAMPLES = 20_000  # Prometheus refuses a query that holds more at once
BUDGET = 8_000  # the build's own per-query budget, under Prometheus' limit


def _usage(seed: int):  # type: ignore[no-untyped-def]
    def shape(k: int, t: int, age: int) -> tuple[float, float]:
        day = math.sin(2 * math.pi * (t % DAY) / DAY)
        return 0.4 + 0.3 * day + 0.2 * noise(seed, k), 200 * MIB + 20 * MIB * noise(seed + 1, k)

    return shape


BOOT_SPIKE = 600  # `boot` burns 2 cores for its first 10 minutes (JIT, caches), 0.3 after
BOOT_START = END - DAY - 100  # off every scrape grid: its first rate point comes 700 s after at 5-minute data


def _boot(k: int, t: int, age: int) -> tuple[float, float]:
    return (2.0 if age <= BOOT_SPIKE else 0.3 + 0.05 * noise(3, k)), 150 * MIB


def _namespace(namespace: str, *, start: int, end: int, boot: bool = False) -> list[Workload]:
    booting = [Workload(namespace, "Deployment", "boot", {"app": _boot},
                        [Pod("boot-5f6c7d8b9-dx4km", BOOT_START, end)])] if boot else []
    return [
        Workload(namespace, "Deployment", f"web{w}", {"app": _usage(7 * w + 1)},
                 [Pod(f"web{w}-7d4b9c8f6-{suffix}", start, end) for suffix in ("bx2kd", "cx2kf")])
        for w in range(2)
    ] + booting


# namespace -> (scrape interval s, the step and rate window the build must read at by default: windows
# that meet at a sample, the step the rate window less one interval, at least a minute)
SCRAPED = {"every15s": (15, "1m", "30s"), "every60s": (60, "1m", "2m"), "every300s": (300, "5m", "10m")}
# (namespace, an explicit step) -> the step and rate window read at: the step wins, never finer than the data
EXPLICIT = {("every60s", "1m"): ("1m", "2m"), ("every300s", "1m"): ("5m", "10m"),
            ("every15s", "30s"): ("30s", "30s")}


@dataclass(frozen=True)
class Scraped:
    server: PromServer


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scraped]:
    root = tmp_path_factory.mktemp("resolution")
    start = END - 2 * DAY
    parts = [(namespace, interval, start, END, True) for namespace, (interval, _, _) in SCRAPED.items()]
    # Downsampled: the first day every 5 minutes (a long-term store's older data), the last every minute.
    parts += [("downsampled", 300, start, END - DAY, False), ("downsampled", 60, END - DAY, END, False)]
    for index, (namespace, interval, lo, hi, boot) in enumerate(parts):
        source = root / f"{index}.om"
        with source.open("w") as out:
            write_openmetrics(_namespace(namespace, start=lo, end=hi, boot=boot), out, step=interval)
        backfill(source, root / "data")
        source.unlink()
    with PromServer(root / "data", max_samples=QUERY_MAX_SAMPLES) as server:
        yield Scraped(server)


def _build(
    scraped: Scraped, namespace: str, *, step: str = "auto", startup_window: int = 300, **overrides: object
) -> BuildResult:
    prom = Prometheus(scraped.server.url)
    try:
        settings = test_settings(namespaces=(namespace,), window="2d", step=step, rate_window="auto",
                                 coverage_step="1h", max_samples=BUDGET,
                                 strategy=StrategySettings(min_hours=6,
                                                           startup_window_seconds=startup_window),
                                 **overrides)
        return build_profiles(prom, settings, end=END)
    finally:
        prom.close()


def _exact(url: str, namespace: str, name: str, *, step: int, rate_window: int, q: float = 0.95) -> float:
    """The pooled q-quantile of every rate point on the subquery's grid, from raw query_range answers."""
    first = (math.floor((END - 2 * DAY) / step) + 1) * step
    series = f'container_cpu_usage_seconds_total{{namespace="{namespace}",pod=~"{name}-.*"}}'
    query = f"rate({series}[{rate_window}s])"
    answer = httpx.post(f"{url}/api/v1/query_range", timeout=60,
                        data={"query": query, "start": first, "end": END // step * step, "step": step})
    answer.raise_for_status()
    return quantile([float(v) for series in answer.json()["data"]["result"] for _, v in series["values"]], q)


READS = [(namespace, "auto", step, rate) for namespace, (_, step, rate) in SCRAPED.items()]
READS += [("downsampled", "auto", "5m", "10m")]  # its coarsest interval, 5 minutes, counts
READS += [(namespace, asked, step, rate) for (namespace, asked), (step, rate) in EXPLICIT.items()]


@pytest.mark.parametrize(("namespace", "asked", "step", "rate"), READS)
def test_a_build_stays_under_its_budget_and_is_exact_at_the_step_it_reads(
    scraped: Scraped, namespace: str, asked: str, step: str, rate: str
) -> None:
    result = _build(scraped, namespace, step=asked)
    assert result.refusals == 0
    assert not result.unread
    assert 0 < result.peak_samples <= QUERY_MAX_SAMPLES
    for name in ("web0", "web1"):
        profile = result.document.workloads[WorkloadKey(namespace, "Deployment", name)].containers["app"]
        assert isinstance(profile, Recommendation)
        evidence = profile.evidence
        assert (evidence.cpu_step, evidence.cpu_rate_window) == (step, rate)
        seconds = {"30s": 30, "1m": 60, "2m": 120, "5m": 300, "10m": 600}
        exact = _exact(scraped.server.url, namespace, name, step=seconds[step], rate_window=seconds[rate])
        assert evidence.cpu_value is not None
        assert abs(evidence.cpu_value / exact - 1) <= TOLERANCE


def test_a_step_finer_than_the_data_is_raised_and_said(scraped: Scraped) -> None:
    result = _build(scraped, "every300s", step="1m")
    assert any("finer than the data" in note for note in result.notes)


def test_the_default_step_raises_nothing(scraped: Scraped) -> None:
    assert not _build(scraped, "every300s").notes


def _startup(result: BuildResult, namespace: str) -> Decimal | None:
    profile = result.document.workloads[WorkloadKey(namespace, "Deployment", "boot")].containers["app"]
    assert isinstance(profile, Recommendation)
    return profile.startup_cpu


@pytest.mark.parametrize("namespace", list(SCRAPED))
def test_a_start_up_is_read_through_the_default_window_at_every_scrape_interval(
    scraped: Scraped, namespace: str
) -> None:
    # At 5-minute scrapes the first rate (two samples) comes 700 s after the start: the point whose
    # rate window reaches into the 5-minute start-up window is the start-up's (none lies inside it).
    result = _build(scraped, namespace)
    assert _startup(result, namespace) == Decimal(2)
    assert not result.notes


def test_a_start_up_window_the_data_cannot_show_is_said_not_a_silent_none(scraped: Scraped) -> None:
    # A 1-minute start-up window at 5-minute scrapes: `boot`'s first rate point comes after it, the
    # web Pods' (samples 150 s after the start, on the build's grid) do not.
    result = _build(scraped, "every300s", startup_window=60)
    assert _startup(result, "every300s") is None
    assert [note for note in result.notes if "start-up window" in note] == [
        "the start-up window (60s) can end before a container's first CPU rate at data every 300s "
        "(two samples): start-ups are read only where the first samples came early; "
        "--startup-window 300 or longer reads every start"
    ]


@given(interval=st.sampled_from([15.0, 30.0, 3600 / 61, 120.0, 300.0, 600.0, 3600.0]),
       window=st.integers(1, 3600), first=st.floats(0, 1, exclude_max=True),
       grid=st.floats(0, 1, exclude_max=True))
def test_a_window_said_to_show_every_start_up_holds_its_first_rate_point(
    interval: float, window: int, first: float, grid: float
) -> None:
    # A start at 0, scraped from `first` of an interval on; the start-up grid at any offset. The first
    # point with two samples in its rate window is the start-up's (read) whenever no note says otherwise.
    chosen = choose(step="auto", rate_window="auto", interval=interval, recorded=False)
    data, step = nice_interval(interval), chosen.startup_step
    samples = [first * data + k * data for k in range(8)]
    points = (grid * step + k * step for k in range(10 * data // step + 10))
    earliest = next(t for t in points if sum(t - chosen.rate_window < s <= t for s in samples) >= 2)
    if chosen.startup_unseen(window) is None:
        assert earliest < chosen.startup_reach(window)
    else:
        assert chosen.startup_unseen(2 * data + step - chosen.rate_window) is None


MINUTE_SCRAPES = 3600 / 61  # 61 samples in an inclusive hour: 1-minute scrapes


@pytest.mark.parametrize(
    ("interval", "step", "rate_window", "expected"),
    [
        # (step, rate window, start-up step) chosen
        (15.0, "auto", "auto", (60, 30, 60)),  # the 1-minute floor: one 15 s interval in four
        (15.0, "auto", "2m", (105, 120, 60)),  # an explicit window: 8 samples, 7 intervals, then the next
        (15.0, "30s", "auto", (30, 30, 30)),  # an explicit step wins (never finer than the data)
        (15.0, "5m", "auto", (300, 30, 60)),
        (MINUTE_SCRAPES, "auto", "auto", (60, 120, 60)),  # each interval counted once
        (MINUTE_SCRAPES, "2m", "auto", (120, 120, 60)),  # every other interval, as asked
        (MINUTE_SCRAPES, "auto", "5m", (240, 300, 60)),
        (MINUTE_SCRAPES, "auto", "1m", (60, 120, 60)),  # a window under two intervals is raised
        (MINUTE_SCRAPES, "90s", "5m", (90, 300, 60)),
        (300.0, "auto", "auto", (300, 600, 300)),
        (300.0, "1m", "auto", (300, 600, 300)),  # a step finer than the data is raised
        (300.0, "auto", "5m", (300, 600, 300)),  # a rate window under two intervals is raised too
        (300.0, "15m", "auto", (900, 600, 300)),  # a coarser step is kept
        (300.0, "auto", "1h", (3300, 3600, 300)),
        (30.0, "auto", "10m", (570, 600, 60)),  # a longer window is kept
        (0.0, "auto", "auto", (60, 120, 60)),  # interval unknown: a minute's
        (0.0, "1m", "auto", (60, 120, 60)),  # interval unknown: the step as asked
        (0.0, "5m", "auto", (300, 600, 300)),
    ],
)
def test_the_step_and_rate_window_follow_the_data(
    interval: float, step: str, rate_window: str, expected: tuple[int, int, int]
) -> None:
    chosen = choose(step=step, rate_window=rate_window, interval=interval, recorded=False)
    assert (chosen.step, chosen.rate_window, chosen.startup_step) == expected


@pytest.mark.parametrize(("interval", "expected"), [(15.0, 60), (MINUTE_SCRAPES, 60), (300.0, 300)])
def test_a_recorded_rate_is_read_at_its_own_interval_by_default(interval: float, expected: int) -> None:
    # Each recorded point once: a coarser step would skip points that share no sample.
    assert choose(step="auto", rate_window="auto", interval=interval, recorded=True).step == expected


@given(interval=st.floats(min_value=1, max_value=3600),
       window=st.sampled_from(["auto", "30s", "2m", "7m", "1h"]))
def test_the_default_step_counts_every_interval_once_above_the_floor(interval: float, window: str) -> None:
    chosen = choose(step="auto", rate_window=window, interval=interval, recorded=False)
    assert chosen.step >= nice_interval(interval)  # never finer than the data
    assert chosen.rate_window >= 2 * nice_interval(interval)  # rate() always has two samples
    # Windows that meet at a sample: no interval twice, none skipped above the floor.
    assert chosen.step == max(FLOOR, chosen.rate_window - nice_interval(interval))
    # Start-ups at a minute or the data's interval: the finest step the floor lets any read take.
    assert chosen.startup_step == max(FLOOR, nice_interval(interval)) <= chosen.step


@pytest.mark.parametrize(
    ("step", "overrides", "every"),
    [
        ("1m", {}, 20),  # 60 s data: 20 minutes apart
        ("2m", {}, 10),
        ("5m", {}, 5),  # 300 s data: every fifth step, 25 minutes apart
        ("1h", {}, 5),
        ("auto", {}, 5),  # unresolved (the checkpoint key's settings): the fifth
        ("1m", {"exact_cpu": False}, 1),  # the rebuild is the answer: every step
        ("1m", {"cpu_rate_metric": "node:cpu:rate"}, 1),  # a recorded rate: each point once
    ],
)
def test_the_estimate_reads_every_fifth_step_at_least_twenty_minutes_apart(
    step: str, overrides: dict[str, object], every: int
) -> None:
    assert test_settings(step=step, window="7d", **overrides).seed_every() == every


def test_measured_intervals_snap_to_the_configured_ones() -> None:
    assert [nice_interval(x) for x in (14.75, 3600 / 61, 3600 / 58, 295.0, 42.0)] == [15, 60, 60, 300, 42]


def test_a_subquery_costs_its_steps_and_a_range_its_samples() -> None:
    # 100 series over a day: at a 1-minute step over 5-minute data the subquery's steps count,
    # over 15-second data the raw samples do.
    assert points(100, span=DAY, step=60, interval=300) == 100 * DAY / 60
    assert points(100, span=DAY, step=60, interval=15) == 100 * DAY / 15


# --------------------------------------------------------------------------- VictoriaMetrics


@pytest.fixture(scope="module")
def victoria(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """VictoriaMetrics keeping one sample per 5 minutes (`-dedup.minScrapeInterval=5m`) of data written
    every minute: the resolution the source serves, not the one it was scraped at."""
    root = tmp_path_factory.mktemp("victoria")
    source = root / "history.om"
    with source.open("w") as out:
        write_openmetrics(_namespace("vm", start=END - 2 * DAY, end=END), out, step=60)
    with VmServer(root / "data", dedup="5m") as server:
        server.load(source)
        yield server.url


def test_victoria_metrics_downsampled_data_is_read_at_its_own_resolution(victoria: str) -> None:
    prom = Prometheus(victoria)
    try:
        settings = test_settings(namespaces=("vm",), window="2d", step="1m", rate_window="auto",
                                 coverage_step="1h", strategy=StrategySettings(min_hours=6))
        result = build_profiles(prom, settings, end=END)
    finally:
        prom.close()
    assert not result.unread
    for name in ("web0", "web1"):
        profile = result.document.workloads[WorkloadKey("vm", "Deployment", name)].containers["app"]
        assert isinstance(profile, Recommendation)
        assert (profile.evidence.cpu_step, profile.evidence.cpu_rate_window) == ("5m", "10m")
        exact = _exact(victoria, "vm", name, step=300, rate_window=600)
        assert profile.evidence.cpu_value is not None
        assert abs(profile.evidence.cpu_value / exact - 1) <= TOLERANCE
