"""The CPU statistic of every container, counted exactly (`exact`) from the passes' estimates.

`pooled` (default): the percentile of every point of every Pod of the workload's container together,
one pool per container. `maxPerPod` (KRR "simple"): each Pod's own percentile over its life in the
window, the largest; one pool per Pod, and only the Pods that can still be the largest are refined.
Pools too thin for a recommendation (`StrategySettings.min_samples`) and idle ones are not asked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from typing import TYPE_CHECKING

from webhook.core.statistic import CpuStatistic
from webhook.core.workload import WorkloadKey
from webhook.profiles import queries
from webhook.profiles.exact import _FIRST_SPREAD, TOLERANCE, Bracket, Pool, refine
from webhook.profiles.prometheus import Prometheus
from webhook.profiles.resolution import AUTO
from webhook.profiles.slices import SeriesId
from webhook.profiles.strategy import SeriesStats, mixture_quantile, series_knots

if TYPE_CHECKING:
    from webhook.profiles.build import BuildSettings

__all__ = ["Container", "exact_cpu"]

Container = tuple[WorkloadKey, str]
_IDLE = 1e-4  # cores: a pool that never went above this is idle, its percentile no question


def _estimate(parts: Sequence[SeriesStats], q: float) -> tuple[Bracket | None, tuple[float, ...]]:
    """The first bracket of some series' slices (its estimate rebuilt from their quantiles, its
    first thresholds as far apart as their quantiles disagree), and the values known whole."""
    summaries = [(s.samples, series_knots(s)) for s in parts if s.cpu_quantiles and not s.cpu_values]
    values = tuple(v for s in parts for v in s.cpu_values)
    if not summaries and not values:
        return None, values
    quantiles = [v for _, knots in summaries for v, p in knots if p < 1] + ([max(values)] if values else [])
    if max(quantiles, default=0.0) <= _IDLE:
        return None, values
    spread = max(quantiles) / max(min(quantiles), _IDLE) - 1
    # As far apart as the slices' own quantiles disagree (up to 6 %: five thresholds then cover
    # +-12 %), so that one more round inside the bracket settles it; never far below the estimate,
    # since every point above the first threshold goes through the bucket arithmetic.
    first = min(max(spread / 4, _FIRST_SPREAD), 0.06)
    return Bracket(estimate=mixture_quantile(summaries, values, q), spread=first), values


def exact_cpu(
    prom: Prometheus,
    settings: BuildSettings,
    stats: Mapping[SeriesId, list[SeriesStats]],
    containers: Mapping[Container, list[SeriesId]],
    *,
    end: float,
    pool: Executor,
    progress: Callable[[str], None],
    statistic: CpuStatistic | None = None,
) -> dict[Container, tuple[float, float]]:
    """Per container: (its CPU statistic in cores, the relative bracket it is known within).

    `statistic`: another one than the build's own (`settings.strategy`), for a policy that names it
    (its rate window resolved like the build's: `auto` is two intervals)."""
    strategy = settings.strategy
    q, per_pod = strategy.quantile, strategy.cpu_aggregate == "maxPerPod"
    rate_window = queries.duration(settings.rate_window)
    if statistic is not None:
        q, per_pod = statistic.percentile / 100, statistic.aggregate == "maxPerPod"
        if statistic.rate_window != AUTO:
            # Never under two of the build's steps (its step is no finer than the data).
            rate_window = max(queries.duration(statistic.rate_window), 2 * queries.duration(settings.step))
    pools: list[Pool] = []
    brackets: dict[object, Bracket] = {}
    members: dict[Container, list[object]] = {}
    for container, sids in containers.items():
        if sum(sum(part.samples for part in stats[sid]) for sid in sids) < strategy.min_samples:
            continue
        groups = [[sid] for sid in sids] if per_pod else [list(sids)]
        members[container] = []
        for group in groups:
            parts = [part for sid in group for part in stats[sid]]
            bracket, values = _estimate(parts, q)
            if bracket is None:
                continue
            key = (container, group[0]) if per_pod else container
            asked = tuple(sid for sid in group if not any(part.cpu_values for part in stats[sid]))
            pools.append(Pool(key, asked, values))
            brackets[key] = bracket
            members[container].append(key)

    def wanted(known: Mapping[object, Bracket]) -> set[object]:
        """The unsettled pools that can still decide their container's statistic."""
        out: set[object] = set()
        for keys in members.values():
            floor = max((known[k].bounds(q)[0] for k in keys), default=0.0)
            out |= {k for k in keys if not known[k].settled(q) and known[k].bounds(q)[1] >= floor}
        return out

    window = queries.duration(settings.window)
    rounds = refine(
        prom, pools, brackets, q=q, window=(end - window, end), step=queries.duration(settings.step),
        rate_window=rate_window, recorded=settings.cpu_rate_metric,
        budget=settings.max_samples, max_query_bytes=settings.max_query_bytes, pool_executor=pool,
        progress=progress, wanted=wanted,
    )
    out: dict[Container, tuple[float, float]] = {}
    for container, keys in members.items():
        known = [brackets[k] for k in keys if brackets[k].total > 0]
        if not known:
            continue
        best = max(known, key=lambda b: b.value(q))
        lo, hi = best.bounds(q)
        value = best.value(q)
        within = min(1.0, max(value - lo, hi - value) / value) if value > 0 else 0.0
        out[container] = (value, round(within, 6))
    loose = sum(1 for _, within in out.values() if within > TOLERANCE)
    progress(f"  exact CPU: {len(out)} containers in {rounds} round(s)"
             + (f", {loose} still wider than {TOLERANCE:.1%}" if loose else ""))
    return out
