"""What a build reads, and what each of its reads may cost Prometheus: the settings, and every budget and
limit derived from them, in one place.

What Prometheus holds in memory for a query is about the points the query materialises (a subquery's
steps, a range selector's raw samples: `resolution.points`), so every heavy read of a build is planned
against a budget of points, and at most `concurrency` of them are in flight at once: what a build costs
Prometheus at a time is bounded whatever the fleet's size. The figures behind each number are in
docs/benchmarks.md (*Profile builds*, *pod-tailor and KRR side by side*), with the commands that
measured them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from webhook.core.policy.statistic import CpuStatistic
from webhook.profiles import queries
from webhook.profiles.checkpoint import checkpoint_key
from webhook.profiles.resolution import AUTO
from webhook.profiles.shards import estimate
from webhook.profiles.strategy import StrategySettings

__all__ = [
    "MIN_SPAN", "PASS_RETRIES", "PASS_SPLITS", "PODS_PER_QUERY", "SUMMARY_FINE", "SUMMARY_PIECE",
    "SUMMARY_POINTS", "SUMMARY_SHARE", "TOP_FETCHES", "TOP_SPLITS", "TOTALS_STEP", "BuildSettings",
    "batch_budget", "fleet_budget", "totals_pieces",
]

# The CPU estimate of the big passes reads every `SEED_EVERY`-th step, at least `SEED_SPAN` seconds apart
# (`BuildSettings.seed_every`).
SEED_EVERY = 5
SEED_SPAN = 1200

# A refused or failing piece is split or asked again; these bound how often, so that what a backend
# refuses for another reason than its size ends as "unread", not as an endless split.
MIN_SPAN = 3600  # seconds: a pass's or the totals' slice is never split shorter
PASS_RETRIES = 3  # a busy or failing server: asked again this many times, after 1, 2, 4 s (`retry_pause`)
PASS_SPLITS = 64  # splits one planned piece of a pass may take: refused at 1/64 of the plan is not about size
TOP_SPLITS = 16  # halvings of one refused top-fetch batch at most
TOP_FETCHES = 4  # top fetches of a pool at most; the last one has no floor (every point)

PODS_PER_QUERY = 500  # Pods one query of the short series or the start-ups names at most

# The totals (`totals.fetch_totals`): a peak of the whole moves slowly, and each step of their subquery
# costs a pass, so their step is at least `TOTALS_STEP`; a point of their subquery weighs `TOTALS_WEIGHT`
# points of a big pass in Prometheus' heap (it relabels and regroups every series at every step).
TOTALS_STEP = 300
TOTALS_WEIGHT = 3

# The summaries (`summarize`): a day's first piece is `SUMMARY_PIECE` seconds at data every `SUMMARY_FINE`
# seconds (longer at coarser data, up to a day); then as many hours as keep an answer under
# `SUMMARY_POINTS` points; and never over `SUMMARY_SHARE` of the per-query budget in series x hourly steps
# (each piece's relabelled and regrouped copy of every series is what Prometheus' heap grows by).
SUMMARY_PIECE = 6 * 3600
SUMMARY_FINE = 60.0
SUMMARY_POINTS = 72_000
SUMMARY_SHARE = 0.03

# A small fleet's heavy queries (the big passes, the top fetch, the start-ups) each hold at most a
# `_FLEET_PIECES`-th of the whole fleet's points, and at least `_FLEET_FLOOR` points (`fleet_budget`).
_FLEET_PIECES = 16
_FLEET_FLOOR = 200_000


@dataclass(frozen=True, slots=True)
class BuildSettings:
    """What to read from Prometheus and what each read may cost (the strategy decides what it means)."""

    window: str = "14d"  # how much history to read
    # The usage step (subquery and range step): `auto`, the rate window (at least a minute), so that
    # each sample interval is counted once; or a duration, raised to the data's own interval when
    # that is coarser (`resolution`).
    step: str = AUTO
    # The `rate()` window over the CPU counter: `auto` (two scrape intervals, the shortest valid) or
    # a duration (raised to two intervals when shorter).
    rate_window: str = AUTO
    # Hours of history come from each container's start time and sample count; only for series
    # without a start time (no cadvisor `container_start_time_seconds`) is a subquery asked when
    # each was first and last seen, at this coarse step (it costs a pass per step).
    coverage_step: str = "1h"
    # Start-up CPU is read from the most recent container starts only: that query costs a full pass
    # over the look-back (every series, every step), and recent starts describe the current image.
    startup_lookback: str = "1d"
    # A recorded CPU rate per container (e.g. kube-prometheus'
    # `node_namespace_pod_container:container_cpu_usage_seconds_total:sum_irate`): several times cheaper.
    cpu_rate_metric: str | None = None
    # Queries in flight at once, all of the build's together: what the build costs Prometheus at a
    # time is this many queries of at most `max_samples` samples each.
    concurrency: int = 2
    # The big passes are cut into this many time slices (the unit a checkpoint keeps).
    # 0: as many as keep a slice under `samples_per_query`, estimated from the live series.
    # With a checkpoint the cut is on whole days (or divisors of a day) of UTC time.
    slices: int = 0
    samples_per_query: int = 40_000_000
    # Each query of a slice then touches at most this many samples: split by namespace and by Pod-name
    # classes (`shards`), which leaves every series' answer as it is. Well under every backend's limit
    # (Prometheus' --query.max-samples is 50 M by default, managed services' lower), and small enough
    # that two in flight cost Prometheus about what the per-container queries of other tools cost it:
    # Prometheus' heap grows by each sample of a query in flight.
    max_samples: int = 500_000
    retry_pause: float = 1.0  # seconds before asking a busy server (429, 5xx, no answer) again; doubled
    namespaces: tuple[str, ...] = ()  # empty: every namespace
    # Series with fewer samples than this (short-lived Pods: Jobs, churn) are fetched whole, so their
    # share of the pooled percentile is exact rather than interpolated between a few quantiles
    # (without `exact_cpu` only: the top fetch reads them as every other series).
    raw_limit: int = 200
    raw_budget: int = 2_000_000  # at most this many values fetched whole per build (memory bound)
    # The exact CPU statistic's queries (`exact`) name the Pods of a batch of pools, up to this much
    # PromQL text each (VictoriaMetrics refuses more than 16 KB by default; Prometheus sets no limit).
    max_query_bytes: int = 16_000
    # The CPU statistic exactly (`exact`: the top points of each pool, ranked); off: rebuilt from each
    # series' quantiles, a few percent off when Pods differ (kept for comparison).
    exact_cpu: bool = True
    # Further CPU statistics to count for the policies that name them (`core.statistic`), each one
    # more top fetch (`exact`); stored per container beside the build's own (`cpu_by`).
    statistics: tuple[CpuStatistic, ...] = ()
    summary_days: int = 7  # days of hourly usage for the drawable summaries (`summarize`); 0: none
    strategy: StrategySettings = field(default_factory=StrategySettings)

    def __post_init__(self) -> None:
        for name in ("window", "step", "rate_window", "coverage_step", "startup_lookback"):
            if getattr(self, name) != AUTO or name not in {"step", "rate_window"}:
                queries.duration(getattr(self, name))  # raises ValueError naming the bad text
        if self.step != AUTO and queries.duration(self.step) > queries.duration(self.window):
            raise ValueError(f"step {self.step} is longer than the window {self.window}")

    def seed_every(self) -> int:
        """The big pass reads every n-th step's usage: when the statistic is counted exactly (`exact`)
        its quantile only places the floors of the top fetch, which answers exactly whatever they are;
        every fifth step and at least 20 minutes apart (every 20th at a 1-minute step), otherwise
        every step (the rebuild is the answer). The coarser estimate costs the passes a fraction of
        the CPU and hardly moves how many points the top fetch returns."""
        if not self.exact_cpu or self.cpu_rate_metric:
            return 1
        step = queries.duration(self.step) if self.step != AUTO else 0
        return max(SEED_EVERY, -(-SEED_SPAN // step)) if step > 0 else SEED_EVERY

    def cpu_grid(self) -> tuple[float, ...]:
        """The CPU quantiles the big pass asks per series and slice: the target alone when the
        statistic is counted exactly (its estimate needs no more), else the target and the max for
        the rebuild (`strategy.mixture_quantile`). Each is a full evaluation of the usage."""
        grid = self.strategy.quantile_grid()
        return (round(self.strategy.quantile, 6),) if self.exact_cpu and self.strategy.quantile < 1 else grid

    def checkpoint_key(self, url: str) -> str:
        """What the slice records of a build with these settings depend on (see `checkpoint`)."""
        return checkpoint_key(url, namespaces=self.namespaces, resolution=(self.step, self.rate_window),
                              cpu_metric=self.cpu_rate_metric or queries.CPU_METRIC,
                              quantiles=(*self.cpu_grid(), self.seed_every(), SEED_SPAN))


def fleet_budget(points: float, *, ceiling: int, largest: float = 0.0) -> int:
    """Points one heavy query of a build may hold: `ceiling` (`--prometheus-max-samples`), or a
    sixteenth of a small fleet's `points` (its live series over the window, `resolution.points`), at
    least `_FLEET_FLOOR` (a fleet under it is one query) and at least the `largest` container's points
    (all its Pods'): a container over the budget on its own is cut into Pod-name classes, a regular
    expression over every Pod name, which doubles the passes' CPU. Few queries either way, as the
    fleet is small; the heap Prometheus grows by follows the fleet rather than the budget. A large
    fleet keeps the whole budget: a smaller one there would cut its passes into Pod-name classes."""
    return min(ceiling, max(_FLEET_FLOOR, math.ceil(points / _FLEET_PIECES), math.ceil(largest)))


def batch_budget(settings: BuildSettings) -> int:
    """Points one batch of the top fetch may materialise: its `concurrency` batches in flight together
    under half of one query's budget (`max_samples`). The top fetch is where Prometheus' heap peaks
    (every point of a batch's Pods, at every step, held while its count and its filter are evaluated);
    half the budget lowers that peak for the same Prometheus CPU, in more queries."""
    return max(1, settings.max_samples // (2 * max(1, settings.concurrency)))


def totals_pieces(settings: BuildSettings, live: float) -> int:
    """Queries (workload groups or time slices: `totals.fetch_totals`) that keep the totals over `live`
    series (cpu and memory ones added up) under the budget. Their subquery holds a point per step of
    at least `TOTALS_STEP`, however often the series are scraped, so that is what is counted (a point
    per raw sample would plan many more queries than the points need)."""
    window = queries.duration(settings.window)
    resolution = max(queries.duration(settings.step), TOTALS_STEP)
    cost = TOTALS_WEIGHT * estimate(live, span=window, resolution=resolution)
    return max(1, -(-int(cost) // settings.max_samples))
