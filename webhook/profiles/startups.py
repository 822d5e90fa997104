"""The start-up CPU of the containers that started recently: their first minutes, read where the big
passes found them starting.

Only the starts the passes found (each slice's first start and the latest, so a restart in place is
seen too) are read, in a few range queries of starts close in time sized to the build's sample budget,
never a pass over every series (`webhook.profiles.build` asks them once the newest slices are in).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from operator import itemgetter
from typing import Any, NamedTuple

from webhook.profiles import queries
from webhook.profiles.budgets import PODS_PER_QUERY, BuildSettings, batch_budget
from webhook.profiles.prometheus import Prometheus, joined
from webhook.profiles.slices import SeriesId, SliceRecords, series_id

__all__ = ["StartupReads", "read_startups", "startup_groups"]


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
    """The points `0 <= t - at < limit` seconds after `at`, as (seconds since, cores): narrowed by
    bisection with a second's margin each side (timestamps are written rounded), then each tested."""
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


def read_startups(
    prom: Prometheus, settings: BuildSettings, records: SliceRecords, *, since: float, end: float,
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
        for record in records
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
