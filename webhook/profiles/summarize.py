"""The build's pass for drawable summaries: each container's usage hour by hour over the last days.

Why not more quantiles in the big passes: each `quantile_over_time` reads every sample of the window
again, the most expensive thing a build does. This pass asks instead for range queries (one for CPU,
one for memory) at 1-hour steps of the usage averaged over the Pods of each controller
(`queries.usage_by_controller`): one series per ReplicaSet, DaemonSet or Job, not one per Pod. Those
hourly points give the 24-point day (their mean by UTC hour) and the distribution (their quantiles).
The quantiles are therefore of hourly averages over the replicas: flatter than the per-Pod usage the
recommendation's own p95 and peak are measured on, which is why the charts draw both. With a
checkpoint, the whole UTC days are kept (`checkpoint.Checkpoint.keep_day`) and not asked again.

A day is asked in pieces (`budgets.SUMMARY_PIECE` at first, then as many hours as keep an answer
under `SUMMARY_POINTS` and the series x hourly steps under `SUMMARY_SHARE` of the per-query budget;
a small fleet's day is one query): what Prometheus' heap grows by is each piece's relabelled and
regrouped copy of every series, while what it costs in CPU is mostly selecting the series and
decoding the raw samples (a chunk is decoded from its start, so an hourly step over 2-hour chunks
decodes nearly every sample, whatever the pieces), then relabelling, averaging and writing the
points as JSON. One kind a query, not one `or` of both (the union relabels and matches every series
at every step again), each answer read without a tuple per point (`Prometheus.range_points`; the
per-point reader of `matrix`, built for long series, is slower on these 6-point series).
docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import base64
import math
import threading
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from webhook.core.model.workload import WorkloadKey
from webhook.profiles import queries
from webhook.profiles.budgets import SUMMARY_FINE, SUMMARY_PIECE, SUMMARY_POINTS, SUMMARY_SHARE
from webhook.profiles.checkpoint import Checkpoint
from webhook.profiles.identity import Owners
from webhook.profiles.prometheus import Prometheus, PrometheusError
from webhook.profiles.slices import aligned_cut
from webhook.profiles.strategy import exact_quantile
from webhook.profiles.summary import HOURS, UsageSummary

__all__ = ["summarize"]

HOUR, DAY = 3600, 86_400
_QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99), ("max", 1.0))
_ANY_SUFFIX = "zzzzz"  # stands for the random suffix cut off in PromQL, so the name reads as a Pod's


@dataclass
class _Usage:
    """One container of one workload: every hourly point, and their sums by hour of day."""

    values: array[float] = field(default_factory=lambda: array("d"))  # a week: 168 a series, 8 bytes each
    sums: list[float] = field(default_factory=lambda: [0.0] * HOURS)
    counts: list[int] = field(default_factory=lambda: [0] * HOURS)

    def add(self, lo: float, values: Iterable[float]) -> None:
        """A day's hourly values, the n-th (from 0) at `lo` + n + 1 hours (NaN: no value)."""
        first = int(lo // HOUR) + 1
        kept, sums, counts = self.values, self.sums, self.counts
        for index, value in enumerate(values):  # a few million points a build: no call per point
            if value == value:  # not NaN
                kept.append(value)
                hour = (first + index) % HOURS
                sums[hour] += value
                counts[hour] += 1

    def quantiles(self) -> dict[str, float]:
        if not self.values:
            return {}
        ordered = sorted(self.values)
        return {name: exact_quantile(ordered, q) for name, q in _QUANTILES}

    def by_hour(self) -> list[float | None]:
        return [s / n if n else None for s, n in zip(self.sums, self.counts, strict=True)]


def _key(owners: Owners, labels: Mapping[str, str]) -> tuple[WorkloadKey, str] | None:
    """The workload and container of a series (see `queries.usage_by_controller` for `controller`)."""
    namespace, controller, container = (
        labels.get("namespace"),
        labels.get("controller", ""),
        labels.get("container"),
    )
    cut, _, whole = controller.partition("~")
    if not namespace or not container or not (cut or whole):
        return None
    pod = f"{cut}-{_ANY_SUFFIX}" if cut else whole
    return owners.workload(namespace, pod), container


_KIND = "summaries"
_LABELS = ("namespace", "controller", "container", "stat")
_NONE = array("d", [math.nan] * HOURS)  # a day without values, copied for each series
_Day = dict[tuple[str, ...], "array[float]"]  # a series' labels -> its hourly values of a day (NaN: none)


def _rows(day: _Day) -> list[list[str]]:
    """A day as checkpoint rows: the labels, then the hourly values as the base64 of float64s (a
    week at 2,000 workloads keeps 2.4 M values: lists of floats would take three times the memory)."""
    return [[*labels, base64.b64encode(values.tobytes()).decode()] for labels, values in day.items()]


def _from_rows(rows: list[Any]) -> _Day | None:
    """`_rows` read back; None when they are not what it wrote (a damaged checkpoint: asked again)."""
    day: _Day = {}
    try:
        for *names, encoded in rows:
            values = array("d")
            values.frombytes(base64.b64decode(encoded, validate=True))
            if len(names) != len(_LABELS) or len(values) != HOURS:
                return None
            day[tuple(map(str, names))] = values
    except (TypeError, ValueError):  # binascii.Error is a ValueError
        return None
    return day


def summarize(
    prom: Prometheus,
    *,
    namespaces: tuple[str, ...],
    rate_window: int,
    recorded: str | None,
    owners: Owners,
    end: float,
    days: int,
    progress: Callable[[str], None],
    checkpoint: Checkpoint | None = None,
    interval: float = SUMMARY_FINE,
    series: float = 0.0,
    budget: int = 0,
    parallel: int = 2,
) -> dict[WorkloadKey, dict[str, UsageSummary]]:
    """Summaries by workload and container from the last `days` (a range query a day for a small fleet,
    up to four for a large one); a query that fails leaves the summaries out (they are for drawing;
    the profiles do not need them).

    With a `checkpoint` the days are UTC days (and the partial ones at the edges): the whole days it
    kept are not asked again, and the whole days asked are kept. `interval`: seconds between samples
    (the pieces' length is bounded by the raw samples they read). `series`: the live series a query
    selects (CPU's, as many memory ones), `budget`: points one query may hold (the build's per-query
    budget); a piece is the whole hours whose series x steps are under `SUMMARY_SHARE` of it, at least
    one (0: unknown). `parallel`: days asked at once (two: Prometheus evaluates them on both cores
    while the answers are read here; one for a small fleet, whose heap it halves for a second or two)."""
    asks = queries.usage_by_controller(namespaces, rate_window=rate_window, recorded=recorded)
    usage = _Usages(owners, kinds=set(asks))
    cut = _days(end, days=days, aligned=checkpoint is not None)
    reader = _DayReader(prom, asks, longest=_longest_piece(interval, series=series, budget=budget),
                        checkpoint=checkpoint, end=end)
    kept: set[tuple[float, float]] = set()
    try:
        for bounds in cut:  # a day at a time: a week of them is 2.4 M points
            day = reader.kept(bounds)
            if day is not None:
                usage.add(day, bounds[0])
                kept.add(bounds)
        asking = [bounds for bounds in cut if bounds not in kept]
        with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
            leading = [number == 0 for number in range(len(asking))]
            for (lo, _), day in zip(asking, pool.map(reader.read, asking, leading), strict=True):
                usage.add(day, lo)
    except PrometheusError as exc:
        progress(f"  summaries left out: {exc}")
        return {}
    out = usage.summaries(basis=f"hourly averages over the Pods, last {days}d")
    drawn = sum(len(c) for c in out.values())
    progress(f"  summaries: {drawn} containers from {days} day(s) of hourly usage")
    return out


def _days(end: float, *, days: int, aligned: bool) -> list[tuple[float, float]]:
    """The last `days` before the last whole hour: UTC days (and the partial ones at the edges) when
    `aligned` (what a checkpoint keeps), else days back from that hour."""
    last = end - end % HOUR
    if not aligned:
        return [(last - (number + 1) * DAY, last - number * DAY) for number in range(days)]
    return aligned_cut(last - days * DAY, last, unit=DAY, step=HOUR)


def _longest_piece(interval: float, *, series: float, budget: int) -> int:
    """Seconds one query may span at most: `SUMMARY_PIECE` at data every `SUMMARY_FINE` seconds,
    longer at coarser data (up to a day), and no more whole hours than keep its series x hourly
    steps under `SUMMARY_SHARE` of `budget` (at least one)."""
    longest = int(min(DAY, max(SUMMARY_PIECE, SUMMARY_PIECE * interval / SUMMARY_FINE))) // HOUR * HOUR
    if series > 0 and budget > 0:
        longest = min(longest, max(1, int(SUMMARY_SHARE * budget // series)) * HOUR)
    return longest


class _DayReader:
    """The hourly values of a day, asked a few hours at a time and kept when a whole UTC day.

    The first day asked sizes the pieces of every other one by its first answer (the most series an
    answer held), so the pieces are the same from one run to the next."""

    def __init__(
        self, prom: Prometheus, asks: Mapping[str, str], *, longest: int, checkpoint: Checkpoint | None,
        end: float,
    ) -> None:
        self.prom, self.asks, self.longest, self.checkpoint, self.end = prom, asks, longest, checkpoint, end
        self.widest = 0  # the most series an answer held so far (the pieces are sized by it)
        self.sized = threading.Event()  # the first piece is answered: the other days start sized by it

    def kept(self, bounds: tuple[float, float]) -> _Day | None:
        """The day the checkpoint kept for `bounds`, if it is a whole UTC day and readable."""
        if self.checkpoint is None or not _whole(bounds):
            return None
        rows = self.checkpoint.take_day(_KIND, bounds[1])
        return _from_rows(rows) if rows is not None else None

    def read(self, bounds: tuple[float, float], leads: bool) -> _Day:
        """The hourly values in (lo, hi]. `leads`: the first day asked; the others wait for its first
        piece."""
        lo, hi = bounds
        day: _Day = {}
        start = int(lo)
        try:
            while start < hi:
                if not leads:
                    self.sized.wait()
                piece = self._piece()
                for stat, query in self.asks.items():  # one kind a query: see queries.usage_by_controller
                    self._ask(day, stat, query, lo=lo, start=start, stop=min(hi, start + piece))
                self.sized.set()
                start += piece
        finally:
            self.sized.set()  # a first day that failed holds no other
        if self.checkpoint is not None and _whole(bounds):
            self.checkpoint.keep_day(_KIND, hi, _rows(day), end=self.end)
        return day

    def _piece(self) -> int:
        if not self.widest:
            return min(SUMMARY_PIECE, self.longest)
        return max(HOUR, min(self.longest, SUMMARY_POINTS // self.widest * HOUR))

    def _ask(self, day: _Day, stat: str, query: str, *, lo: float, start: int, stop: float) -> None:
        """One kind's hourly values in (start, stop] into `day`, whose first hour ends at `lo` + 1 h."""
        answer = self.prom.range_points(query, start=start + HOUR, end=stop, step=HOUR)
        self.widest = max(self.widest, len(answer))
        for series, points in answer:  # 6 points a series: the per-series work counts
            labels = (series.get("namespace", ""), series.get("controller", ""),
                      series.get("container", ""), stat)  # _LABELS
            values = day.get(labels)
            if values is None:
                values = day[labels] = array("d", _NONE)
            for at, value in points:
                values[round((at - lo) / HOUR) - 1] = float(value)


def _whole(bounds: tuple[float, float]) -> bool:
    """Whether `bounds` is a whole UTC day (what a checkpoint keeps)."""
    return bounds[1] - bounds[0] == DAY and bounds[1] % DAY == 0


class _Usages:
    """Every container's `_Usage` by kind, from the days' hourly values as they come."""

    def __init__(self, owners: Owners, *, kinds: set[str]) -> None:
        self.owners, self.kinds = owners, kinds
        self.usage: defaultdict[tuple[WorkloadKey, str, str], _Usage] = defaultdict(_Usage)

    def add(self, day: _Day, lo: float) -> None:
        for names, values in day.items():
            labels = dict(zip(_LABELS, names, strict=True))
            key = _key(self.owners, labels)
            stat = labels["stat"]
            if key is not None and stat in self.kinds:
                self.usage[(*key, stat)].add(lo, values)

    def summaries(self, *, basis: str) -> dict[WorkloadKey, dict[str, UsageSummary]]:
        out: defaultdict[WorkloadKey, dict[str, UsageSummary]] = defaultdict(dict)
        usage = self.usage
        for key, container in {(k, c) for k, c, _ in usage}:
            cpu = usage.get((key, container, "cpu"), _Usage())
            memory = usage.get((key, container, "memory"), _Usage())
            out[key][container] = UsageSummary(
                cpu=cpu.quantiles(),
                memory=memory.quantiles(),
                cpu_by_hour=cpu.by_hour(),
                memory_by_hour=memory.by_hour(),
                samples=max(len(cpu.values), len(memory.values)),
                basis=basis,
            )
        return dict(out)
