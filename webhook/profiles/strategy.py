"""From one container's usage history to a recommendation: pure functions, typed settings.

The inputs are what Prometheus reduces on its side (per Pod series and time slice: a few quantiles of
the CPU rate, the memory peak, the sample count and the first and last sample time), so a build never
moves raw points. The CPU percentile over all Pods of a workload is the quantile of the *mixture* of
those series (each weighted by its sample count), which is exact when the replicas behave alike and
stays honest under churn, where a short-lived Pod must not count as much as one that ran for a week.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal

from webhook.core.model.profile import ContainerProfile, Evidence, NoRecommendation, Recommendation

__all__ = [
    "ContainerHistory",
    "SeriesStats",
    "StrategySettings",
    "confidence",
    "covered_hours",
    "exact_quantile",
    "mixture_quantile",
    "recommend",
    "round_up",
    "series_knots",
    "startup_phase",
]

MIB = 2**20
AGGREGATES = ("pooled", "maxPerPod")


@dataclass(frozen=True, slots=True)
class StrategySettings:
    """How history becomes a request. Defaults follow KRR/VPA where they agree, and say why otherwise."""

    # CPU request = this percentile of usage (KRR "simple": p95 over 14 days). CPU is compressible:
    # above the request a container is only slowed, so the tail need not be covered.
    cpu_percentile: float = 95.0
    # Over what the percentile is taken: `pooled` (every Pod's points together, as VPA's histogram
    # does: the default) or `maxPerPod` (each Pod's own percentile, the largest: KRR "simple").
    cpu_aggregate: str = "pooled"
    # Memory request = peak working set x (1 + margin). Memory is not compressible (overuse gets the
    # Pod evicted or OOM-killed), so size from the peak, not a percentile; +15 % as VPA and KRR do.
    memory_margin: float = 0.15
    # After an OOM kill the peak seen is the limit, not the need: at least x1.2 or +100 MiB (VPA).
    oom_factor: float = 1.2
    oom_bytes: int = 100 * MIB
    # Floors per container: below these, scheduling and cgroup accounting stop meaning anything.
    min_cpu: Decimal = Decimal("0.010")
    min_memory: Decimal = Decimal(16 * MIB)
    # Round up to steps a person would write: 5m of CPU, 1 MiB of memory.
    cpu_step: Decimal = Decimal("0.005")
    memory_step: Decimal = Decimal(MIB)
    # Too little history gives no recommendation (the engine falls back to the policy): under 24 h
    # misses the daily cycle; under 100 points a percentile is noise (KRR asks for 100 points too).
    min_hours: float = 24.0
    min_samples: int = 100
    # The first minutes of a container's life are its start-up (JVM JIT, cache warm-up ...).
    startup_window_seconds: int = 300

    def __post_init__(self) -> None:
        if not 0 < self.cpu_percentile <= 100:
            raise ValueError(f"cpu_percentile must be in (0, 100], got {self.cpu_percentile}")
        if self.cpu_aggregate not in AGGREGATES:
            raise ValueError(f"cpu_aggregate must be one of {', '.join(AGGREGATES)}, "
                             f"got {self.cpu_aggregate!r}")
        if not 0 <= self.memory_margin <= 10:
            raise ValueError(f"memory_margin must be in [0, 10], got {self.memory_margin}")
        if self.oom_factor < 1 or self.oom_bytes < 0:
            raise ValueError("oom_factor must be >= 1 and oom_bytes >= 0")
        if self.cpu_step <= 0 or self.memory_step <= 0:
            raise ValueError("cpu_step and memory_step must be positive")
        if self.min_hours < 0 or self.min_samples < 1:
            raise ValueError("min_hours must be >= 0 and min_samples >= 1")

    @property
    def quantile(self) -> float:
        return self.cpu_percentile / 100

    def quantile_grid(self) -> tuple[float, ...]:
        """CPU quantiles fetched per series for the mixture: the target and the max.

        Each is one full pass of Prometheus over the window, the dominant cost of a build, so two.
        Series short enough to matter by their few points are fetched whole instead (`build`).
        """
        return tuple(sorted({round(self.quantile, 6), 1.0}))


@dataclass(frozen=True, slots=True)
class SeriesStats:
    """One container of one Pod over one time slice, as Prometheus reduced it."""

    samples: int
    first: float  # unix seconds of the first and last sample
    last: float
    memory_peak: float | None = None  # bytes
    cpu_quantiles: Mapping[float, float] = field(default_factory=dict)  # quantile (1.0 = max) -> cores
    cpu_values: Sequence[float] = ()  # every usage value, when the series is short enough to fetch whole


@dataclass(frozen=True, slots=True)
class ContainerHistory:
    """Everything known about one container of one workload."""

    series: Sequence[SeriesStats]
    oom_kills: int = 0
    # One entry per observed container start: (seconds since start, cores) points in the start-up window.
    startups: Sequence[Sequence[tuple[float, float]]] = ()
    # The CPU statistic counted exactly over the window (`webhook.profiles.exact`): (cores, relative
    # bracket); None: rebuilt from the series' quantiles (`mixture_quantile`).
    cpu_exact: tuple[float, float] | None = None
    resolution: tuple[str, str] = ("", "")  # the step and rate window the usage was read at


def covered_hours(intervals: Iterable[tuple[float, float]]) -> float:
    """Hours covered by the union of [first, last] intervals (replicas overlap, churned Pods chain)."""
    total, end = 0.0, -math.inf
    for lo, hi in sorted(intervals):
        if hi <= end:
            continue
        total += hi - max(lo, end)
        end = hi
    return total / 3600


def _cdf(knots: Sequence[tuple[float, float]], x: float) -> float:
    """Piecewise-linear CDF through (value, probability) knots.

    Below the first knot the first segment's slope goes on down (to 0): a series is known only
    around its high quantiles, and the local density there says more about the mass just below
    than a straight line from zero would (which, for a bursty series, puts a day with few bursts
    far too low). A single knot falls back to the line from (0, 0).
    """
    (v0, p0), rest = knots[0], knots[1:]
    if x < v0:
        if rest and rest[0][0] > v0:
            return max(0.0, p0 - (v0 - x) * (rest[0][1] - p0) / (rest[0][0] - v0))
        return p0 * x / v0 if v0 > 0 else 0.0
    prev_v, prev_p = v0, p0
    for value, p in rest:
        if x < value:
            if value <= prev_v:
                return prev_p
            return prev_p + (p - prev_p) * (x - prev_v) / (value - prev_v)
        prev_v, prev_p = value, p
    return 1.0


def series_knots(stats: SeriesStats) -> list[tuple[float, float]]:
    """(cores, cumulative probability) knots of a series known by its quantiles."""
    return sorted((v, q) for q, v in stats.cpu_quantiles.items())


def exact_quantile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks, as Prometheus' `quantile_over_time` computes it."""
    ordered = sorted(values)
    rank = q * (len(ordered) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (rank - lo)


def _breakpoints(knots: Sequence[tuple[float, float]]) -> list[float]:
    """Where `_cdf` of these knots changes slope: the knots, and where the first segment meets 0."""
    points = [v for v, _ in knots]
    if len(knots) > 1 and knots[1][0] > knots[0][0] and knots[1][1] > knots[0][1]:
        (v0, p0), (v1, p1) = knots[0], knots[1]
        points.append(v0 - p0 * (v1 - v0) / (p1 - p0))
    return points


def mixture_quantile(
    summaries: Sequence[tuple[int, Sequence[tuple[float, float]]]], values: Sequence[float], q: float
) -> float:
    """The q-quantile of all usage pooled: series known by (value, CDF) knots plus series known whole.

    With only whole series this is the exact quantile of the pooled values. Otherwise the pooled CDF
    (sample-weighted piecewise-linear CDFs through each series' knots, plus the exact count of the
    values known whole) is solved for q exactly: it is linear between its breakpoints, so a binary
    search over them finds the segment (or the jump) where it reaches q, a dozen evaluations rather
    than a bisection's forty. Series that share their q-quantile give exactly that value, and the
    answer always lies between the series' own q-quantiles.
    """
    usable = [(n, knots) for n, knots in summaries if n > 0 and knots]
    if not usable:
        if not values:
            raise ValueError("no usage data")
        return exact_quantile(values, q)
    ordered = sorted(values)
    target = q * (sum(n for n, _ in usable) + len(ordered))

    def pooled(x: float) -> float:
        """Samples at or below `x` (right-continuous, like every CDF here)."""
        return sum(n * _cdf(knots, x) for n, knots in usable) + bisect.bisect_right(ordered, x)

    points = sorted({0.0, *ordered, *(x for _, knots in usable for x in _breakpoints(knots) if x > 0)})
    if pooled(points[0]) >= target:
        return points[0]
    lo, hi = 0, len(points) - 1  # pooled(points[lo]) < target <= pooled(points[hi])
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pooled(points[mid]) >= target:
            hi = mid
        else:
            lo = mid
    a, b = points[lo], points[hi]
    # Linear on (a, b): its value just below b comes from two points; beyond it, a jump at b.
    at_a = pooled(a)
    before_b = 2 * pooled((a + b) / 2) - at_a
    if target >= before_b:
        return b
    return a + (b - a) * (target - at_a) / (before_b - at_a)


def confidence(hours: float, samples: int, settings: StrategySettings) -> float:
    """0..1, half-saturated at the minimums: exactly enough history gives 0.5, the engine's default bar."""
    by_hours = hours / (hours + settings.min_hours) if settings.min_hours else 1.0
    by_samples = samples / (samples + settings.min_samples)
    return round(min(by_hours, by_samples), 4)


def round_up(value: float, step: Decimal, floor: Decimal) -> Decimal:
    """`value` rounded up to a multiple of `step`, never below `floor`."""
    steps = (Decimal(repr(value)) / step).to_integral_value(rounding=ROUND_CEILING)
    return max(steps * step, floor)


def startup_phase(points: Sequence[tuple[float, float]], *, steady: float) -> tuple[float, float | None]:
    """Peak cores of one start-up, and how long usage stayed above `steady` (None if it never did)."""
    ordered = sorted(points)
    peak = max((cores for _, cores in ordered), default=0.0)
    above = [age for age, cores in ordered if cores > steady]
    if not above:
        return peak, None
    after = [age for age, cores in ordered if age > above[0] and cores <= steady]
    end = after[0] if after else ordered[-1][0]
    return peak, max(end, 0.0)


def recommend(history: ContainerHistory, *, settings: StrategySettings, window: str) -> ContainerProfile:
    """A recommendation with its evidence, or NoRecommendation saying what is missing."""
    series = [s for s in history.series if s.samples > 0]
    hours = covered_hours((s.first, s.last) for s in series)
    samples = sum(s.samples for s in series)
    if hours < settings.min_hours or samples < settings.min_samples:
        return NoRecommendation(
            f"only {hours:.1f}h and {samples} samples of history "
            f"(needs {settings.min_hours:g}h and {settings.min_samples})"
        )
    summaries = [(s.samples, series_knots(s)) for s in series if s.cpu_quantiles and not s.cpu_values]
    values = [v for s in series for v in s.cpu_values]
    peaks = [s.memory_peak for s in series if s.memory_peak is not None]
    if not summaries and not values:
        return NoRecommendation("no CPU usage series (container_cpu_usage_seconds_total)")
    if not peaks:
        return NoRecommendation("no memory series (container_memory_working_set_bytes)")
    statistic = history.cpu_exact[0] if history.cpu_exact else mixture_quantile(summaries, values,
                                                                                  settings.quantile)
    cpu = round_up(statistic, settings.cpu_step, settings.min_cpu)
    peak = max(peaks)
    memory_need = peak * (1 + settings.memory_margin)
    if history.oom_kills:
        memory_need = max(memory_need, peak * settings.oom_factor, peak + settings.oom_bytes)
    memory = round_up(memory_need, settings.memory_step, settings.min_memory)
    startup_cpu: Decimal | None = None
    startup_seconds: float | None = None
    if history.startups:
        phases = [startup_phase(points, steady=float(cpu)) for points in history.startups if points]
        if phases:
            startup_cpu = round_up(max(p for p, _ in phases), settings.cpu_step, settings.min_cpu)
            durations = [d for _, d in phases if d is not None]
            # A rate read just past the window (its rate window reaches into it) ends no phase later
            # than the window: start-up is what the window says it is (probes' budgets read this).
            startup_seconds = min(max(durations), settings.startup_window_seconds) if durations else None
    evidence = Evidence(
        window=window,
        samples=samples,
        hours=round(hours, 2),
        cpu_percentile=settings.cpu_percentile,
        memory_margin=settings.memory_margin,
        confidence=confidence(hours, samples, settings),
        oom_kills=history.oom_kills,
        cpu_aggregate=settings.cpu_aggregate,
        cpu_step=history.resolution[0],
        cpu_rate_window=history.resolution[1],
        cpu_value=round(statistic, 6),
        cpu_within=history.cpu_exact[1] if history.cpu_exact else None,
        memory_peak=peak,
    )
    return Recommendation(
        cpu=cpu, memory=memory, evidence=evidence, startup_cpu=startup_cpu, startup_seconds=startup_seconds
    )
