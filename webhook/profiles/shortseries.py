"""Series the passes summarize poorly, completed by small reads: when those without a start time were
seen, and every value of the short-lived ones.

A series without a container start time is placed in the window by a coarse coverage query; a
short-lived one (Jobs, churn) is fetched whole, as a few quantiles would interpolate between too few
points.

Each is read only for the series the passes found needing it, in few queries sized to the build's
sample budget, never one per Pod (`webhook.profiles.build` asks them once the passes are in).
"""

from __future__ import annotations

from collections import defaultdict, deque
from concurrent.futures import Executor, Future

from webhook.profiles import queries
from webhook.profiles.budgets import PODS_PER_QUERY, BuildSettings
from webhook.profiles.prometheus import Prometheus, Series
from webhook.profiles.slices import SeriesId, SliceRecords, StatsBySeries, series_id, without_start
from webhook.profiles.strategy import SeriesStats

__all__ = ["fetch_short_series", "seen_without_start"]


def seen_without_start(
    prom: Prometheus, settings: BuildSettings, asked: SliceRecords, *, end: float
) -> dict[SeriesId, tuple[float, float]]:
    """First and last time seen for series without a container start time (one subquery, coarse)."""
    if not without_start(asked):
        return {}
    step = queries.duration(settings.coverage_step)
    window = queries.duration(settings.window)
    answer = prom.instant(queries.coverage(settings.namespaces, span=window, coverage_step=step), at=end)
    seen: dict[SeriesId, dict[str, float]] = defaultdict(dict)
    for sample in answer:
        key = series_id(sample.labels)
        if key is not None:
            seen[key][sample.labels.get("stat", "")] = sample.value
    # Seen at coverage steps: the life extends half a step beyond the first and last on average.
    return {
        sid: (v["first"] - step / 2, v["last"] + step / 2)
        for sid, v in seen.items()
        if "first" in v and "last" in v
    }


def fetch_short_series(
    prom: Prometheus, settings: BuildSettings, stats: StatsBySeries, *, end: float, pool: Executor
) -> None:
    """Replace the quantile summaries of short series by all their values (one range query per 500
    Pods, or fewer: as many as keep its points under the build's sample budget).

    The queries go through `pool`, as many at once as `prom` is bound to (`--prometheus-concurrency`).
    """
    sizes = {sid: stats.samples(sid) for sid in stats}
    short, budget = [], settings.raw_budget
    for sid in sorted(sizes, key=lambda sid: (sizes[sid], sid)):
        if sizes[sid] >= settings.raw_limit or sizes[sid] > budget:
            break
        short.append(sid)
        budget -= sizes[sid]
    values: dict[SeriesId, list[float]] = defaultdict(list)
    step = queries.duration(settings.step)
    window = queries.duration(settings.window)
    chunks = _chunks(short, sizes, budget=settings.max_samples, pods=PODS_PER_QUERY)

    def ask(chunk: list[tuple[str, str]]) -> Future[list[Series]]:
        query = queries.cpu_values(
            sorted({ns for ns, _ in chunk}) or settings.namespaces,
            [pod for _, pod in chunk],
            rate_window=queries.duration(settings.rate_window),
            recorded=settings.cpu_rate_metric,
        )
        return pool.submit(prom.range, query, start=end - window + step, end=end, step=step)

    # As many asked at once as `prom` lets run (`--prometheus-concurrency`), each answer read as soon
    # as it is next: never more answers held than queries in flight (a 20,000-workload build has dozens).
    asked: deque[Future[list[Series]]] = deque(ask(chunk) for chunk in chunks[: max(1, settings.concurrency)])
    waiting = deque(chunks[len(asked):])
    while asked:
        answer = asked.popleft().result()
        if waiting:
            asked.append(ask(waiting.popleft()))
        for series in answer:
            whose = series_id(series.labels)
            if whose is not None:
                values[whose] += [max(v, 0.0) for _, v in series.points]
        del answer
    for sid in short:
        if values.get(sid):
            parts = stats[sid]
            peaks = [p.memory_peak for p in parts if p.memory_peak is not None]
            stats[sid] = [
                SeriesStats(
                    samples=sum(p.samples for p in parts),
                    first=min(p.first for p in parts),
                    last=max(p.last for p in parts),
                    memory_peak=max(peaks) if peaks else None,
                    cpu_values=tuple(values[sid]),
                )
            ]


def _chunks(
    short: list[SeriesId], sizes: dict[SeriesId, int], *, budget: int, pods: int
) -> list[list[tuple[str, str]]]:
    """The Pods of `short` in groups of at most `pods` whose samples add up to at most `budget`."""
    per_pod: dict[tuple[str, str], int] = defaultdict(int)
    for sid in short:
        per_pod[sid[:2]] += sizes[sid]
    out: list[list[tuple[str, str]]] = []
    used = 0
    for pod in sorted(per_pod):
        if not out or len(out[-1]) >= pods or used + per_pod[pod] > budget:
            out.append([])
            used = 0
        out[-1].append(pod)
        used += per_pod[pod]
    return out
