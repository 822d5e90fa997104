"""The CPU statistic of every container, exact (`exact`), from the passes' estimates.

`pooled` (default): the percentile of every point of every Pod of the workload's container together,
one pool per container. `maxPerPod` (KRR "simple"): each Pod's own percentile over its life in the
window, the largest; one pool per Pod. The passes' estimate (rebuilt from each series' quantiles at
every fifth step) is each pool's floor: how much the top fetch returns, not what it answers. The
rebuild is low, not high, when Pods differ (it under-weights the busy ones) and within a few percent
for alike ones, so the floor sits under most of the points asked for; a pool left short is fetched
again lower. Pools too thin for a recommendation (`StrategySettings.min_samples`) and idle
ones are not asked.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor

from webhook.core.model.workload import WorkloadKey
from webhook.core.policy.statistic import CpuStatistic
from webhook.profiles import queries
from webhook.profiles.budgets import BuildSettings, batch_budget
from webhook.profiles.exact import Pool, by_pod, top_fetch
from webhook.profiles.prometheus import Prometheus
from webhook.profiles.resolution import AUTO
from webhook.profiles.slices import SeriesId
from webhook.profiles.strategy import SeriesStats, mixture_quantile, series_knots

__all__ = ["Container", "exact_cpu"]

Container = tuple[WorkloadKey, str]
_IDLE = 1e-4  # cores: a pool that never went above this is idle, its percentile no question


def _estimate(parts: Sequence[SeriesStats], q: float) -> float | None:
    """The pool's percentile rebuilt from its slices' quantiles and the values known whole (None: idle;
    -inf: unknown, every point asked: series too short for a point on the passes' coarser grid)."""
    summaries = [(s.samples, series_knots(s)) for s in parts if s.cpu_quantiles and not s.cpu_values]
    values = tuple(v for s in parts for v in s.cpu_values)
    if not summaries and not values:
        return -math.inf if any(s.samples > 0 for s in parts) else None
    quantiles = [v for _, knots in summaries for v, p in knots if p < 1] + ([max(values)] if values else [])
    if max(quantiles, default=0.0) <= _IDLE:
        return None
    return mixture_quantile(summaries, values, q)


def exact_cpu(
    prom: Prometheus,
    settings: BuildSettings,
    stats: Mapping[SeriesId, list[SeriesStats]],
    containers: Mapping[Container, list[SeriesId]],
    *,
    end: float,
    pool: Executor,
    progress: Callable[[str], None],
    interval: float = 0.0,
    statistic: CpuStatistic | None = None,
) -> dict[Container, tuple[float, float]]:
    """Per container: (its CPU statistic in cores, 0.0: exact, the relative bracket it is known within).

    `interval`: the finest scrape interval measured (what a query over raw samples costs; 0 unknown).
    `statistic`: another one than the build's own (`settings.strategy`), for a policy that names it
    (its rate window resolved by the build as its own, `resolution.choose`; `auto`: the build's)."""
    strategy = settings.strategy
    q, per_pod = strategy.quantile, strategy.cpu_aggregate == "maxPerPod"
    rate_window = queries.duration(settings.rate_window)
    if statistic is not None:
        q, per_pod = statistic.percentile / 100, statistic.aggregate == "maxPerPod"
        if statistic.rate_window != AUTO:
            # As the build resolved it (`resolution.choose`: two intervals at least), not raised to
            # its step: a step as long as the build's window may well be longer than this one's.
            rate_window = queries.duration(statistic.rate_window)
    window = queries.duration(settings.window)
    pools: list[Pool] = []
    members: dict[Container, list[object]] = {}
    lives: dict[SeriesId, float] = {}
    for container, sids in containers.items():
        each = {sid: stats[sid] for sid in sids}  # made once here: `stats` makes them when asked
        if sum(part.samples for parts in each.values() for part in parts) < strategy.min_samples:
            continue
        groups = [[sid] for sid in sids] if per_pod else [list(sids)]
        members[container] = []
        for group in groups:
            parts = [part for sid in group for part in each[sid]]
            estimate = _estimate(parts, q)
            if estimate is None:
                continue
            key = (container, group[0]) if per_pod else container
            asked = tuple(sid for sid in group if not any(part.cpu_values for part in each[sid]))
            values = tuple(v for part in parts for v in part.cpu_values)
            pools.append(Pool(key, asked, estimate, values))
            members[container].append(key)
            for sid in asked:
                life = sum(part.last - part.first for part in each[sid]) + 2 * interval
                lives[sid] = min(window, life)
    step = queries.duration(settings.step)
    outcome = top_fetch(
        prom, pools, q=q, window=(end - window, end), step=step, rate_window=rate_window,
        recorded=settings.cpu_rate_metric, budget=batch_budget(settings), interval=interval, lives=lives,
        neighbours=by_pod(list(stats)), max_query_bytes=settings.max_query_bytes, pool_executor=pool,
        progress=progress,
    )
    out: dict[Container, tuple[float, float]] = {}
    for container, keys in members.items():
        statistics = [outcome.values[k] for k in keys if k in outcome.values]
        if statistics:
            out[container] = (max(statistics), 0.0)
    share = outcome.points / outcome.total if outcome.total else 0.0
    progress(f"  exact CPU: {len(out)} containers from {outcome.queries} queries, {outcome.points:,} of "
             f"{outcome.total:,} points above the floors ({share:.1%})"
             + (f"; {outcome.refetched} pool(s) fetched again lower" if outcome.refetched else ""))
    return out
