"""Exact pooled CPU percentiles by a top fetch: every usage point at or above a floor, ranked locally.

The pooled q-quantile of a pool's N points (Prometheus' `quantile_over_time` definition: linear between
the closest ranks `floor(q(N-1))` and the next) depends only on its `N - floor(q(N-1))` largest points:
the top 5 % and one more for a p95. So for every pool (a container of a workload, every point of
every Pod pooled; or one Pod, for `maxPerPod`) the build asks Prometheus, once per batch of pools, how
many points each series has (`count_over_time` of the usage subquery) and every point above a floor
set below the passes' estimate (`rate(...) > floor`, a `query_range` on the same grid): a few percent
of the points come back, and the percentile is read off them exactly. When fewer than the needed
points are above the floor (the estimate was high), only those pools are fetched again with a lower
floor (`Outcome.refetched` counts them): the answer is exact by construction whatever the floor, the
floor only sets how much comes back.

Batches group pools of alike floors (bands `_BAND` apart on a log scale, never two in a batch; within
a band, by container name; one selector of namespaces x Pods per container name, so no other
container of those Pods is read) under the build's budget of materialised points
(`resolution.points`: a subquery's steps or a range's raw samples) and its query-text limit; a
batch takes its pools' lowest floor. The window is cut in spans when one series alone would exceed
the budget (counts and points of the spans add up).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field

from webhook.profiles import queries
from webhook.profiles.budgets import TOP_FETCHES, TOP_SPLITS
from webhook.profiles.prometheus import Prometheus, Sample, TooManySamplesError, Values
from webhook.profiles.resolution import points
from webhook.profiles.slices import SeriesId, series_id

__all__ = ["TOLERANCE", "Outcome", "Pool", "from_top", "needed", "top_fetch"]

TOLERANCE = 0.01  # the goal: the stored statistic within 1 % of the exact percentile (met exactly here)
_BAND = 0.05  # pools whose floors are within 5 % (log scale) share a batch
_LOWER = 0.5  # a floor that left too few points above it is halved for the next fetch
_GROUPS = 8  # container names in a batch at most (a selector each, joined by `or`)
_GROUP_TEXT = 160  # the PromQL text of one more selector, besides its names


@dataclass(frozen=True, slots=True)
class Pool:
    """Usage points pooled for one statistic: these series (their Pods' container), points above
    `floor` fetched; `values`: points known whole (short series fetched raw), ranked here too."""

    key: object
    series: tuple[SeriesId, ...]
    floor: float
    values: tuple[float, ...] = ()


def needed(total: int, q: float) -> int:
    """How many of the largest of `total` points the q-quantile depends on."""
    return total - math.floor(q * (total - 1)) if total > 0 else 0


def from_top(top: Sequence[float], *, total: int, q: float) -> float | None:
    """The q-quantile of `total` points (linear between closest ranks) from its largest ones, `top`
    (every point above some floor, in any order); None when `top` holds too few of them."""
    if total <= 0 or len(top) < needed(total, q):
        return None
    largest = sorted(top, reverse=True)
    rank = q * (total - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, total - 1)
    at_lo, at_hi = largest[total - 1 - lo], largest[total - 1 - hi]
    return at_lo + (at_hi - at_lo) * (rank - lo)


@dataclass
class Outcome:
    """What a top fetch found: the percentile per pool key, and what it cost."""

    values: dict[object, float] = field(default_factory=dict)
    queries: int = 0
    points: int = 0  # usage points fetched (above the floors)
    total: int = 0  # usage points in the pools
    refetched: int = 0  # pools fetched again with a lower floor
    rounds: int = 0  # fetches: the first, and those of the pools short of points, in the band below
    floors: dict[object, float] = field(default_factory=dict)  # the floor each value was read above


@dataclass
class _Known:
    total: int = 0  # counted in the first fetch
    floor: float = -math.inf  # every point above it is in `top`
    top: list[float] = field(default_factory=list)


def top_fetch(
    prom: Prometheus,
    pools: Sequence[Pool],
    *,
    q: float,
    window: tuple[float, float],
    step: int,
    rate_window: int,
    recorded: str | None,
    budget: int,
    interval: float,
    lives: Mapping[SeriesId, float],
    neighbours: Mapping[str, Sequence[SeriesId]],
    max_query_bytes: int,
    pool_executor: Executor,
    progress: Callable[[str], None],
) -> Outcome:
    """The exact q-quantile of every pool: counts and top points, fetched again lower where short.

    `lives`: seconds each series lived in the window (what it costs a query); `neighbours`: every
    series known per Pod name (a selector by Pod names picks them all; they count in the budget).
    """
    fetching = _Fetching(prom, pool_executor, window=window, step=step, rate_window=rate_window,
                         recorded=recorded, budget=budget, interval=interval, lives=lives,
                         neighbours=neighbours, max_bytes=max_query_bytes)
    outcome = Outcome()
    before = prom.queries
    floors = {pool.key: pool.floor for pool in pools}
    todo = [pool for pool in pools if pool.series or pool.values]
    known: dict[object, _Known] = {}
    for attempt in range(TOP_FETCHES):
        if not todo:
            break
        last = attempt == TOP_FETCHES - 1
        # A pool fetched before knows its points and every point above its floor then: it is asked
        # again only for the band under that floor (`ceiling`), and no count.
        fresh = {pool.key: _Known(floor=-math.inf if last else floors[pool.key]) for pool in todo}
        ceilings = {key: known[key].floor for key in fresh if key in known}
        batches = fetching.fetch(todo, fresh, ceilings=ceilings, counts=attempt == 0)
        outcome.points += _join(todo, fresh, known)
        short = _read_off(todo, known, q=q, outcome=outcome)
        for pool in short:
            floors[pool.key] = floors[pool.key] * _LOWER if floors[pool.key] > 1e-6 else -math.inf
        again = f"; {len(short)} with too few points above their floor, asked again lower" if short else ""
        progress(f"  exact CPU: fetch {attempt + 1}, {len(todo)} pool(s) in {batches} batch(es){again}")
        outcome.refetched += len(short)
        outcome.rounds = attempt + 1
        todo = short
    outcome.queries = prom.queries - before
    return outcome


def _join(todo: Sequence[Pool], fresh: Mapping[object, _Known], known: dict[object, _Known]) -> int:
    """Each pool's fetch (`fresh`) joined to what the earlier ones found (`known`): the band between
    this fetch's floor and the earlier one, and its values known whole the first time. Returns the
    points the band added."""
    added = 0
    for pool in todo:
        fetched = fresh[pool.key]
        before_floor = known[pool.key].floor if pool.key in known else math.inf
        band = [v for v in [*fetched.top, *pool.values] if fetched.floor < v <= before_floor]
        added += len(band)
        if pool.key in known:  # what the earlier fetches found, and the band under it
            known[pool.key].top += band
            known[pool.key].floor = fetched.floor
        else:
            fetched.total += len(pool.values)
            fetched.top = band
            known[pool.key] = fetched
    return added


def _read_off(
    todo: Sequence[Pool], known: Mapping[object, _Known], *, q: float, outcome: Outcome
) -> list[Pool]:
    """Each pool's percentile read off its top points into `outcome`; the pools with too few points
    above their floor (and some points at all) are returned, to be fetched again lower."""
    short = []
    for pool in todo:
        pooled = known[pool.key]
        value = from_top(pooled.top, total=pooled.total, q=q)
        if value is not None:
            outcome.values[pool.key] = value
            outcome.floors[pool.key] = pooled.floor
            outcome.total += pooled.total
        elif pooled.total > 0:
            short.append(pool)
    return short


class _Fetching:
    """One top fetch's queries: the pools in batches under the budget, asked through `executor`."""

    def __init__(
        self, prom: Prometheus, executor: Executor, *, window: tuple[float, float], step: int,
        rate_window: int, recorded: str | None, budget: int, interval: float,
        lives: Mapping[SeriesId, float], neighbours: Mapping[str, Sequence[SeriesId]], max_bytes: int,
    ) -> None:
        self.prom, self.executor, self.window, self.step = prom, executor, window, step
        self.rate_window, self.recorded, self.budget, self.interval = rate_window, recorded, budget, interval
        self.lives, self.neighbours, self.max_bytes = lives, neighbours, max_bytes

    def fetch(
        self, todo: Sequence[Pool], fresh: Mapping[object, _Known], *, ceilings: Mapping[object, float],
        counts: bool,
    ) -> int:
        """Every point of the pools' series above their floors (`fresh`, up to `ceilings`), and their
        counts of points (`counts`: the first fetch), into `fresh`; returns the batches asked."""
        batches = _batches([pool for pool in todo if pool.series], fresh, budget=self.budget, step=self.step,
                           interval=self.interval, window=self.window, lives=self.lives,
                           neighbours=self.neighbours, max_bytes=self.max_bytes, ceilings=ceilings)
        asked = [
            (batch, self.executor.submit(_read, self.prom, batch, span=span, step=self.step,
                                         rate_window=self.rate_window, recorded=self.recorded, counts=counts))
            for batch, span in batches
        ]
        for pool in todo:  # a pool's points are known above the highest floor of its batches (below)
            if pool.series:
                fresh[pool.key].floor = -math.inf
        for batch, answer in asked:
            owners = batch.owners
            numbers, tops = answer.result()
            for sample in numbers:
                sid = series_id(sample.labels)
                if sid in owners and math.isfinite(sample.value):
                    fresh[owners[sid]].total += round(sample.value)
            for labels, values in tops:
                sid = series_id(labels)
                if sid in owners:
                    fresh[owners[sid]].top += values
            for key in set(owners.values()):
                # A pool over several batches keeps what all of them fetched: above the highest floor.
                fresh[key].floor = max(fresh[key].floor, batch.floor)
        return len(asked)


@dataclass
class _Batch:
    """Pools asked together: per container name, the namespaces and Pods its selector names (one
    selector per name, joined by `or`: no other container of those Pods is read)."""

    owners: dict[SeriesId, object]  # the series asked -> its pool
    floor: float
    ceiling: float = math.inf  # a band's top (its pools fetched before above their floors): what they lack
    groups: dict[str, tuple[set[str], set[str]]] = field(default_factory=dict)  # container -> (ns, pods)

    def add(self, sid: SeriesId) -> None:
        namespaces, pods = self.groups.setdefault(sid[2], (set(), set()))
        namespaces.add(sid[0])
        pods.add(sid[1])

    def halves(self) -> list[_Batch]:
        """The batch in two by its Pods (each half selects a subset of what it did)."""
        pods = sorted({sid[1] for sid in self.owners})
        out = []
        for part in (set(pods[: len(pods) // 2]), set(pods[len(pods) // 2:])):
            half = _Batch({sid: key for sid, key in self.owners.items() if sid[1] in part}, self.floor,
                          self.ceiling)
            for sid in half.owners:
                half.add(sid)
            out.append(half)
        return [half for half in out if half.owners]

    def usages(self, *, rate_window: int, recorded: str | None) -> list[str]:
        return [
            queries.cpu_usage(sorted(namespaces), rate_window=rate_window, recorded=recorded,
                              pods=sorted(pods), containers=(container,))
            for container, (namespaces, pods) in sorted(self.groups.items())
        ]


def _read(
    prom: Prometheus, batch: _Batch, *, span: tuple[float, float], step: int, rate_window: int,
    recorded: str | None, counts: bool = True, splits: int = 0,
) -> tuple[list[Sample], list[Values]]:
    """One batch over one span: its points per series (instant, at the span's end; `counts`) and its
    points above the floor, up to its ceiling (a range query on the same grid: multiples of `step` in
    (lo, hi]). Refused for its size (the server's own limit under the plan), asked again in halves:
    Pods, then time."""
    lo, hi = span
    usages = batch.usages(rate_window=rate_window, recorded=recorded)
    # One second short of the span: the grid (lo, hi] in Prometheus 2 (whose subqueries include their
    # start) as in 3, the range query's own, and spans that meet count their common edge once.
    width = f"{round(hi - lo) - 1}s"
    sub = f"[{width}:{queries.promql_duration(step)}]"
    counted = " or ".join(f"count_over_time({usage}{sub})" for usage in usages)
    floor = "" if math.isinf(batch.floor) else f" > {batch.floor!r}"
    floor += "" if math.isinf(batch.ceiling) else f" <= {batch.ceiling!r}"
    above = " or ".join(f"{usage}{floor}" for usage in usages)
    first = (math.floor(lo / step) + 1) * step
    try:
        return (prom.instant(counted, at=hi) if counts else [],
                prom.range_values(above, start=first, end=hi, step=step))
    except TooManySamplesError:
        steps = round((hi - lo) / step)
        if splits >= TOP_SPLITS or (len({sid[1] for sid in batch.owners}) < 2 and steps < 2):
            raise
        if len({sid[1] for sid in batch.owners}) >= 2:
            pieces = [(half, span) for half in batch.halves()]
        else:
            middle = lo + steps // 2 * step
            pieces = [(batch, (lo, middle)), (batch, (middle, hi))]
        numbers: list[Sample] = []
        tops: list[Values] = []
        for piece, piece_span in pieces:
            piece_numbers, piece_tops = _read(prom, piece, span=piece_span, step=step,
                                              rate_window=rate_window, recorded=recorded, counts=counts,
                                              splits=splits + 1)
            numbers += piece_numbers
            tops += piece_tops
        return numbers, tops


def _spans(window: tuple[float, float], *, pieces: int, step: int) -> list[tuple[float, float]]:
    lo, hi = window
    steps = max(1, round((hi - lo) / step))
    cuts = [hi - round(steps * k / pieces) * step for k in range(pieces + 1)]
    return [(max(lo, cuts[k + 1]), cuts[k]) for k in range(pieces) if cuts[k] > cuts[k + 1]][::-1]


def _batches(
    pools: Sequence[Pool], known: Mapping[object, _Known], *, budget: int, step: int, interval: float,
    window: tuple[float, float], lives: Mapping[SeriesId, float],
    neighbours: Mapping[str, Sequence[SeriesId]], max_bytes: int, ceilings: Mapping[object, float],
) -> list[tuple[_Batch, tuple[float, float]]]:
    """(batch, span) to ask: pools of alike floors together, each batch's selected series (every
    container of its Pods that its container names match) under `budget` materialised points; a
    batch of pools fetched before asks up to the highest of their old floors (`ceilings`)."""
    span_width = window[1] - window[0]

    def cost(sid: SeriesId, width: float) -> float:
        return points(1, span=min(width, lives.get(sid, width)) or step, step=step, interval=interval)

    longest = max((cost(sid, span_width) for pool in pools for sid in pool.series), default=0.0)
    pieces = max(1, math.ceil(2 * longest / max(1, budget)))
    spans = _spans(window, pieces=pieces, step=step)
    width = span_width / pieces

    def band(pool: Pool) -> float:
        floor = known[pool.key].floor
        return math.floor(math.log(floor) / math.log1p(_BAND)) if floor > 0 else -math.inf

    ordered = sorted(pools, key=lambda p: (band(p), p.series[0][2], known[p.key].floor, str(p.key)))
    out: list[_Batch] = []
    current: _Batch | None = None
    load = 0.0
    size = 0
    current_band = None
    for pool in ordered:
        floor = known[pool.key].floor
        if band(pool) != current_band:  # a batch takes its lowest floor: never across bands
            current, current_band = None, band(pool)
        for sid in pool.series:
            namespace, pod, container = sid
            if current is not None:
                grown = _grown(current, sid, neighbours)
                extra = sum(cost(other, width) for other in grown)
                group = current.groups.get(container)
                more = len(pod) + len(namespace) + 6 + (_GROUP_TEXT + len(container) if group is None else 0)
                if (load + extra > budget or size + more > max_bytes
                        or (group is None and len(current.groups) >= _GROUPS)):
                    current = None
            if current is None:
                current = _Batch({}, floor)
                out.append(current)
                load, size = 0.0, 400
                grown = _grown(current, sid, neighbours)
                extra = sum(cost(other, width) for other in grown)
            current.owners[sid] = pool.key
            current.floor = min(current.floor, floor)
            if pool.key in ceilings:
                ceiling = ceilings[pool.key]
                current.ceiling = ceiling if math.isinf(current.ceiling) else max(current.ceiling, ceiling)
            group = current.groups.get(container)
            size += _GROUP_TEXT + len(container) if group is None else 0
            size += len(pod) + 3 if group is None or pod not in group[1] else 0
            size += len(namespace) + 3 if group is None or namespace not in group[0] else 0
            current.add(sid)
            load += extra
    return [(batch, span) for span in spans for batch in out]


def _grown(batch: _Batch, sid: SeriesId, neighbours: Mapping[str, Sequence[SeriesId]]) -> set[SeriesId]:
    """The series the batch's selectors pick once `sid` joins it, that they did not before: its
    Pod's of its container name, or every Pod's of that name when its namespace is new there."""
    namespace, pod, container = sid
    namespaces, pods = batch.groups.get(container, (set(), set()))
    wider = namespace not in namespaces
    out: set[SeriesId] = set()
    for name in (pods | {pod}) if wider else (pod,):
        for other in neighbours.get(name, (sid,)):
            seen = other[0] in namespaces or other[0] == namespace
            if other[2] == container and seen and not _in(batch, other):
                out.add(other)
    if not _in(batch, sid):
        out.add(sid)
    return out


def _in(batch: _Batch, sid: SeriesId) -> bool:
    group = batch.groups.get(sid[2])
    return group is not None and sid[0] in group[0] and sid[1] in group[1]


def by_pod(series: Sequence[SeriesId]) -> dict[str, list[SeriesId]]:
    """Every series per Pod name (the `neighbours` of `top_fetch`)."""
    out: dict[str, list[SeriesId]] = defaultdict(list)
    for sid in series:
        out[sid[1]].append(sid)
    return out
