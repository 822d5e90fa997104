"""What the big passes point to: the values of short-lived series, the start-up CPU of the
containers that started recently, and when series without a start time were seen.

Each is read only for the series the passes found needing it, in few queries sized to the build's
sample budget, never one per Pod (`webhook.profiles.build` asks them once the passes are in).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict, deque
from concurrent.futures import Executor, Future
from operator import itemgetter
from typing import Any, NamedTuple

from webhook.profiles import queries
from webhook.profiles.budgets import PODS_PER_QUERY, BuildSettings, batch_budget
from webhook.profiles.prometheus import Prometheus, Series, joined
from webhook.profiles.slices import SeriesId, SliceRecords, StatsBySeries, series_id, without_start
from webhook.profiles.strategy import SeriesStats

__all__ = ["StartupReads", "fetch_short_series", "seen_without_start", "startup_groups", "startups"]


def seen_without_start(
    prom: Prometheus, settings: BuildSettings, asked: SliceRecords, *, end: float
) -> dict[SeriesId, tuple[float, float]]:
    """First and last time seen for series without a container start time (one subquery, coarse)."""
    if not without_start(asked):
        return {}
    step = queries.duration(settings.coverage_step)
    window = queries.duration(settings.window)
    answer = prom.instant(queries.coverage(settings.namespaces, span=window, coverage_step=step), at=end)
    found: dict[SeriesId, dict[str, float]] = defaultdict(dict)
    for sample in answer:
        key = series_id(sample.labels)
        if key is not None:
            found[key][sample.labels.get("stat", "")] = sample.value
    # Seen at coverage steps: the life extends half a step beyond the first and last on average.
    return {
        sid: (v["first"] - step / 2, v["last"] + step / 2)
        for sid, v in found.items()
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
            found = series_id(series.labels)
            if found is not None:
                values[found] += [max(v, 0.0) for _, v in series.points]
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


_Start = tuple[SeriesId, float]  # a container series and one time it started


def startup_groups(
    starts: list[_Start], *, window: int, step: int, budget: int, pods: int
) -> list[list[_Start]]:
    """Starts by time, in groups whose range query stays under `budget` points and `pods` Pods."""
    groups: list[list[_Start]] = []
    first = 0.0
    members: set[tuple[str, str]] = set()  # the current group's Pods (not recounted at every start)
    for start in sorted(starts, key=lambda item: (item[1], item[0])):
        group = groups[-1] if groups else None
        pod = start[0][:2]
        if group is not None:
            points = (len(group) + 1) * ((start[1] - first + window) // step + 1)
            if points <= budget and len(members) + (pod not in members) <= pods:
                group.append(start)
                members.add(pod)
                continue
        groups.append([start])
        first = start[1]
        members = {pod}
    return groups


_TIME = itemgetter(0)


def _run(points: list[Any], at: float, limit: float) -> list[tuple[float, float]]:
    """The points `0 <= t - at < limit` seconds after `at`, as (seconds since, cores). Found by
    bisection with a second's margin each side, then tested as each point always was."""
    lo = bisect_left(points, at - 1, key=_TIME)
    hi = bisect_right(points, at + limit + 1, lo=lo, key=_TIME)
    run = []
    for t, v in points[lo:hi]:
        since = float(t) - at
        if 0 <= since < limit:
            run.append((since, max(float(v), 0.0)))
    return run


class StartupReads(NamedTuple):
    """The start-up runs read per series, and how many starts the look-back held (read or not)."""

    runs: dict[SeriesId, list[list[tuple[float, float]]]]
    starts: int


def startups(
    prom: Prometheus, settings: BuildSettings, found: SliceRecords, *, since: float, end: float,
    reach: int, step: int | None = None,
) -> StartupReads:
    """Start-up CPU points (seconds since the start, cores) of the containers that started since `since`.

    Their start times are already known from the memory pass (each slice's first start and the
    latest, so a restart in place is seen too), so only their first minutes are read: one range
    query per group of starts close in time, never a pass over every series. The points read are
    those less than `reach` seconds after a start (`Resolution.startup_reach`: the start-up window
    and the rate window reaching into it). `step`: the build's start-up step
    (`Resolution.startup_step`, finer than its usage step), else the usage step.
    """
    step = step or queries.duration(settings.step)
    starts = sorted({
        (record.series, at)
        for record in found
        for at in (record.start, record.latest)
        if at is not None and since <= at <= end
    })
    out: dict[SeriesId, list[list[tuple[float, float]]]] = defaultdict(list)
    # A range answer comes back whole (every point of the group's span, most of them before or after
    # the minutes read): planned as a top-fetch batch is, not as a reduced pass (`batch_budget`).
    for group in startup_groups(starts, window=reach, step=step, budget=batch_budget(settings),
                                 pods=PODS_PER_QUERY):
        first, last = group[0][1], group[-1][1]
        lo = end - (end - first) // step * step  # on the grid of the window's end, as the passes are
        query = queries.cpu_values(
            sorted({sid[0] for sid, _ in group}),
            sorted({sid[1] for sid, _ in group}),
            rate_window=queries.duration(settings.rate_window),
            recorded=settings.cpu_rate_metric,
        )
        wanted: dict[SeriesId | None, list[float]] = defaultdict(list)
        for member, at in group:
            wanted[member].append(at)
        answer = prom.range_points(query, start=lo, end=min(end, last + reach), step=step)
        for labels, points in joined(answer):
            sid = series_id(labels)
            for at in wanted.get(sid, ()):
                run = _run(points, at, reach)
                if run and sid is not None:
                    out[sid].append(run)
    return StartupReads(out, len(starts))
