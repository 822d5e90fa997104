"""Prometheus -> strategy -> store: one profile build.

A build issues a fixed handful of queries for the whole scope (all namespaces, or the ones named):
owners, OOM kills, current requests, the scrape interval, then the two big passes (CPU quantiles,
memory peaks with counts and start times) slice by slice, then the usage of short-lived Pods and of
the containers that started recently. When Prometheus refuses a slice for loading too many samples,
it is halved and asked again, so a large cluster costs a few more queries, never one per Pod. With a
checkpoint, the whole past days it holds are not asked again (see `checkpoint`).
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from decimal import Decimal

from webhook.core.profile import ContainerProfile
from webhook.core.workload import WorkloadKey
from webhook.profiles import queries
from webhook.profiles.checkpoint import Checkpoint, checkpoint_key
from webhook.profiles.connection import PrometheusConnection
from webhook.profiles.identity import Owners
from webhook.profiles.prometheus import Prometheus, TooManySamplesError
from webhook.profiles.slices import (
    DAY,
    By,
    SeriesId,
    SliceRecords,
    StatsBySeries,
    aligned_cut,
    auto_slices,
    by_series,
    even_cut,
    per_day,
    records,
    series_id,
    without_start,
)
from webhook.profiles.store import ProfileDocument, WorkloadEntry
from webhook.profiles.strategy import ContainerHistory, SeriesStats, StrategySettings, recommend
from webhook.profiles.summarize import summarize
from webhook.profiles.totals import attach_totals, fetch_totals

__all__ = ["BuildResult", "BuildSettings", "IncrementalBuild", "build_profiles"]

Progress = Callable[[str], None]
_Bounds = tuple[float, float]
_MIN_SLICE = 3600
_HEARTBEAT = 15.0  # seconds between "still reading" lines during the long queries


@dataclass(frozen=True, slots=True)
class BuildSettings:
    """What to read from Prometheus; the strategy decides what the numbers mean."""

    window: str = "14d"  # how much history to read
    step: str = "1m"  # resolution of the usage series (subquery and range step)
    rate_window: str = "5m"  # the `rate()` window over the CPU counter (>= 2 scrape intervals)
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
    concurrency: int = 4  # queries in flight at once (Prometheus evaluates them on separate cores)
    # The big passes start cut into this many time slices (more are cut when Prometheus refuses one
    # for --query.max-samples or --query.timeout; starting small saves the refused attempt).
    # 0: as many as keep each query under `samples_per_query`, estimated from the live series.
    # With a checkpoint the cut is on whole days (or divisors of a day) of UTC time instead.
    slices: int = 0
    samples_per_query: int = 40_000_000  # Prometheus' --query.max-samples is 50 M by default
    namespaces: tuple[str, ...] = ()  # empty: every namespace
    # Series with fewer samples than this (short-lived Pods: Jobs, churn) are fetched whole, so their
    # share of the pooled percentile is exact rather than interpolated between a few quantiles.
    raw_limit: int = 200
    raw_budget: int = 2_000_000  # at most this many values fetched whole per build (memory bound)
    summary_days: int = 7  # days of hourly usage for the drawable summaries (`summarize`); 0: none
    strategy: StrategySettings = field(default_factory=StrategySettings)

    def __post_init__(self) -> None:
        for name in ("window", "step", "rate_window", "coverage_step", "startup_lookback"):
            queries.duration(getattr(self, name))  # raises ValueError naming the bad text
        if queries.duration(self.step) > queries.duration(self.window):
            raise ValueError(f"step {self.step} is longer than the window {self.window}")

    def checkpoint_key(self, url: str) -> str:
        """What the slice records of a build with these settings depend on (see `checkpoint`)."""
        return checkpoint_key(url, namespaces=self.namespaces, resolution=(self.step, self.rate_window),
                              cpu_metric=self.cpu_rate_metric or queries.CPU_METRIC,
                              quantiles=self.strategy.quantile_grid())


@dataclass(frozen=True, slots=True)
class BuildResult:
    document: ProfileDocument
    queries: int
    seconds: float
    warnings: tuple[str, ...]
    series: int
    reused_slices: int = 0  # slices taken from the checkpoint instead of Prometheus
    notes: tuple[str, ...] = ()  # settings the build had to change (shown even with -q)


def _noop(_: str) -> None:
    return None


class _Collector:
    """The two big passes, slice by slice: asked a little ahead, reduced as they arrive."""

    def __init__(
        self, prom: Prometheus, settings: BuildSettings, *, end: float, progress: Progress,
        checkpoint: Checkpoint | None,
    ) -> None:
        self.prom, self.settings, self.end, self.progress = prom, settings, end, progress
        self.window = queries.duration(settings.window)
        self.step = queries.duration(settings.step)
        self.rate = queries.duration(settings.rate_window)
        self.ns: Sequence[str] = settings.namespaces
        self.slices = max(1, settings.slices)
        self.checkpoint = checkpoint
        self._ids: dict[SeriesId, SeriesId] = {}

    def _reduced(self, query: str, at: float) -> By:
        return by_series(self.prom.instant(query, at=at), interned=self._ids)

    def _submit(self, pool: ThreadPoolExecutor, bounds: _Bounds) -> dict[str, Future[By]]:
        lo, hi = bounds
        span = round(hi - lo)
        cpu = queries.cpu_stats(self.ns, span=span, step=self.step, rate_window=self.rate,
                                quantiles=self.settings.strategy.quantile_grid(),
                                recorded=self.settings.cpu_rate_metric)
        memory = queries.memory_stats(self.ns, span=span, latest=max(300, 2 * self.step))
        return {name: pool.submit(self._reduced, query, hi)
                for name, query in (("memory", memory), ("cpu", cpu))}

    def _collect(
        self, pool: ThreadPoolExecutor, bounds: _Bounds, futures: dict[str, Future[By]]
    ) -> SliceRecords:
        """The records of `bounds`; a slice Prometheus refuses (too many samples, timeout) is halved."""
        waited = time.monotonic()
        while not_done := [name for name, future in futures.items() if not future.done()]:
            wait([futures[name] for name in not_done], timeout=_HEARTBEAT)
            if still := [name for name in not_done if not futures[name].done()]:
                self.progress(f"  still reading {', '.join(still)} ({time.monotonic() - waited:.0f}s)")
        lo, hi = bounds
        try:
            answers = {name: future.result() for name, future in futures.items()}
        except TooManySamplesError:
            span = round(hi - lo)
            if span <= _MIN_SLICE:
                raise
            refused = queries.promql_duration(span)
            self.progress(f"  Prometheus refused {refused} at once: splitting it in two")
            middle = lo + (span // 2 // self.step) * self.step
            first = self._collect(pool, (lo, middle), self._submit(pool, (lo, middle)))
            first.extend(self._collect(pool, (middle, hi), self._submit(pool, (middle, hi))))
            return first
        return records(bounds, answers["memory"], answers["cpu"], grid=self.settings.strategy.quantile_grid())

    def passes(
        self, pool: ThreadPoolExecutor, *, recent: float, on_recent: Callable[[SliceRecords], None]
    ) -> SliceRecords:
        """Every slice of the window: from the checkpoint when it has it, else asked.

        Newest first: once the slices back to `recent` are in, `on_recent` gets their records (the
        start-up reads need no more), while the older slices are still being asked.
        """
        lo, hi = self.end - self.window, self.end
        if self.checkpoint is not None:
            unit = self.checkpoint.grid_unit(DAY // per_day(self.slices, window=self.window))
            grid = aligned_cut(lo, hi, unit=unit, step=self.step)[::-1]
        else:
            unit, grid = 0, even_cut(lo, hi, pieces=self.slices, step=self.step)[::-1]
        kept = {b: found for b in grid if self.checkpoint and (found := self.checkpoint.take(b)) is not None}
        asked = [b for b in grid if b not in kept]
        # The next slice is asked as soon as one query of the current one is answered: Prometheus
        # keeps both cores busy, and at most two slices' answers are held at once (memory).
        futures = {b: self._submit(pool, b) for b in asked[:1]}
        width = len(self.settings.strategy.quantile_grid())
        out = SliceRecords(width)
        recent_at: float | None = recent
        for i, bounds in enumerate(grid):
            if bounds in kept:
                out.extend(kept[bounds])
            else:
                current = futures.pop(bounds)
                if (following := asked.index(bounds) + 1) < len(asked):
                    wait(current.values(), return_when=FIRST_COMPLETED)
                    futures[asked[following]] = self._submit(pool, asked[following])
                found = self._collect(pool, bounds, current)
                if self.checkpoint is not None:
                    self.checkpoint.keep(bounds, found, unit=unit, end=self.end)
                out.extend(found)
                self.progress(f"  slice {i + 1}/{len(grid)}: {len(found)} series")
            if recent_at is not None and bounds[0] <= recent_at:
                recent_copy = SliceRecords(width)  # `out` grows on while the reader runs
                recent_copy.extend(out)
                on_recent(recent_copy)
                recent_at = None
        where = f", {len(kept)} from the checkpoint" if kept else ""
        self.progress(f"  {len(out)} series values from {len(grid)} slice(s){where}")
        return out


def _seen_without_start(
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


def _fetch_short_series(
    prom: Prometheus, settings: BuildSettings, stats: StatsBySeries, *, end: float
) -> None:
    """Replace the quantile summaries of short series by all their values (one query per 500 Pods)."""
    sizes = {sid: stats.samples(sid) for sid in stats}
    short, budget = [], settings.raw_budget
    for sid in sorted(sizes, key=lambda sid: (sizes[sid], sid)):
        if sizes[sid] >= settings.raw_limit or sizes[sid] > budget:
            break
        short.append(sid)
        budget -= sizes[sid]
    pods = sorted({(sid[0], sid[1]) for sid in short})
    values: dict[SeriesId, list[float]] = defaultdict(list)
    for lo in range(0, len(pods), 500):
        chunk = pods[lo : lo + 500]
        query = queries.cpu_values(
            sorted({ns for ns, _ in chunk}) or settings.namespaces,
            [pod for _, pod in chunk],
            rate_window=queries.duration(settings.rate_window),
            recorded=settings.cpu_rate_metric,
        )
        step = queries.duration(settings.step)
        window = queries.duration(settings.window)
        for series in prom.range(query, start=end - window + step, end=end, step=step):
            found = series_id(series.labels)
            if found is not None:
                values[found] += [max(v, 0.0) for _, v in series.points]
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


_Start = tuple[SeriesId, float]  # a container series and one time it started


def _startup_groups(
    starts: list[_Start], *, window: int, step: int, budget: int, pods: int
) -> list[list[_Start]]:
    """Starts by time, in groups whose range query stays under `budget` points and `pods` Pods."""
    groups: list[list[_Start]] = []
    first = 0.0
    for start in sorted(starts, key=lambda item: (item[1], item[0])):
        group = groups[-1] if groups else None
        if group is not None:
            points = (len(group) + 1) * ((start[1] - first + window) // step + 1)
            if points <= budget and len({sid[:2] for sid, _ in group} | {start[0][:2]}) <= pods:
                group.append(start)
                continue
        groups.append([start])
        first = start[1]
    return groups


def _startups(
    prom: Prometheus, settings: BuildSettings, found: SliceRecords, *, since: float, end: float
) -> dict[SeriesId, list[list[tuple[float, float]]]]:
    """Start-up CPU points (seconds since the start, cores) of the containers that started since `since`.

    Their start times are already known from the memory pass (each slice's first start and the
    latest, so a restart in place is seen too), so only their first minutes are read: one range
    query per group of starts close in time, never a pass over every series.
    """
    step = queries.duration(settings.step)
    limit = settings.strategy.startup_window_seconds
    starts = sorted({
        (record.series, at)
        for record in found
        for at in (record.start, record.latest)
        if at is not None and since <= at <= end
    })
    out: dict[SeriesId, list[list[tuple[float, float]]]] = defaultdict(list)
    for group in _startup_groups(starts, window=limit, step=step, budget=500_000, pods=500):
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
        for series in prom.range(query, start=lo, end=min(end, last + limit), step=step):
            sid = series_id(series.labels)
            for at in wanted.get(sid, ()):
                run = [(t - at, max(v, 0.0)) for t, v in series.points if 0 <= t - at <= limit]
                if run and sid is not None:
                    out[sid].append(run)
    return out


def build_profiles(
    prom: Prometheus,
    settings: BuildSettings,
    *,
    end: float | None = None,
    progress: Progress = _noop,
    checkpoint: Checkpoint | None = None,
) -> BuildResult:
    """Read the window from Prometheus and return a complete document; raises PrometheusError.

    With a `checkpoint` (for `settings.checkpoint_key(prom.url)`), the slices it holds are not asked
    again and the whole slices this build asks are added to it, unless Prometheus sent warnings;
    the caller persists it.
    """
    started = time.monotonic()
    end = time.time() if end is None else end
    # Worked on as a copy and handed back only if no answer came with warnings: partial answers
    # are never kept, whoever keeps the checkpoint (the command's file, `serve`'s memory).
    working = checkpoint.copy() if checkpoint is not None else None
    collector = _Collector(prom, settings, end=end, progress=progress, checkpoint=working)
    window, ns = collector.window, settings.namespaces
    scope = ", ".join(ns) if ns else "all namespaces"
    progress(f"reading {settings.window} of history from {prom.url} ({scope})")
    if checkpoint is not None and checkpoint.note:
        progress(f"  {checkpoint.note}")
    lookback = min(window, queries.duration(settings.startup_lookback))
    notes: list[str] = []
    with ThreadPoolExecutor(max_workers=max(2, settings.concurrency)) as pool:
        # The small queries go first, then the two big passes, then what the passes point to.
        owners_f = pool.submit(prom.instant, queries.owners_query(ns, span=window), at=end)
        oom_f = pool.submit(prom.instant, queries.oom_kills(ns, span=window), at=end)
        requests_f = pool.submit(prom.instant, queries.requests_query(ns, span=window), at=end)
        # The scrape interval and the live series size the big passes (and the rate window every CPU
        # query uses): asked first, it is one small query.
        sizes = {s.labels.get("stat"): s.value for s in prom.instant(queries.scrape_interval(ns), at=end)}
        per_hour, live = sizes.get("per_hour", 0.0), sizes.get("series", 0.0)
        interval = 3600 / per_hour if per_hour > 0 else float(collector.step)
        if not settings.cpu_rate_metric:
            collector.rate, raised = queries.safe_rate_window(collector.rate, interval=interval)
            if raised:
                notes.append(raised)
                progress(f"  warning: {raised}")
                settings = dataclasses.replace(settings, rate_window=queries.promql_duration(collector.rate))
        totals_f = pool.submit(fetch_totals, prom, namespaces=ns, window=window, step=collector.step,
                               rate_window=collector.rate, end=end, recorded=settings.cpu_rate_metric,
                               progress=progress)
        if not settings.slices:
            collector.slices = auto_slices(series=live, window=window, interval=interval,
                                           samples_per_query=settings.samples_per_query)
            progress(f"  {live:.0f} live series every {interval:g}s: the big passes in "
                     f"{collector.slices} slice(s)" + (" or more, on whole days" if checkpoint else ""))
        reading: list[Future[dict[SeriesId, list[list[tuple[float, float]]]]]] = []
        found = collector.passes(
            pool,
            recent=end - lookback,
            on_recent=lambda recent: reading.append(
                pool.submit(_startups, prom, settings, recent, since=end - lookback, end=end)
            ),
        )
        if working is not None:
            working.prune(before=end - window)
        owners = Owners.from_samples(owners_f.result())
        progress(f"  owners: {len(owners.pods)} pods known to kube-state-metrics")
        seen = _seen_without_start(prom, settings, found, end=end)
        stats = StatsBySeries(found, interval=interval, seen=seen, since=end - window,
                              grid=settings.strategy.quantile_grid())
        _fetch_short_series(prom, settings, stats, end=end)
        oom: dict[SeriesId, int] = {}
        for sample in oom_f.result():
            sid = series_id(sample.labels)
            if sid is not None:
                oom[sid] = 1
        requests: dict[SeriesId, dict[str, Decimal]] = defaultdict(dict)
        for sample in requests_f.result():
            sid, resource = series_id(sample.labels), sample.labels.get("resource")
            if sid is not None and resource in {"cpu", "memory"}:
                requests[sid][resource] = Decimal(repr(sample.value))
        # Asked as soon as the newest slices were in (while older ones were read): `passes` always
        # calls back, the oldest slice starting at the window's start, no later than the look-back.
        (startups_f,) = reading
        startups = startups_f.result()
    progress(f"  start-up: {sum(len(v) for v in startups.values())} container starts seen")

    histories: dict[tuple[WorkloadKey, str], list[SeriesId]] = defaultdict(list)
    for sid in stats:
        histories[(owners.workload(sid[0], sid[1]), sid[2])].append(sid)
    containers: dict[WorkloadKey, dict[str, ContainerProfile]] = defaultdict(dict)
    current: dict[WorkloadKey, dict[str, dict[str, Decimal]]] = defaultdict(dict)
    for (key, container), sids in histories.items():
        each = {sid: stats[sid] for sid in sids}  # made here, dropped after: one container at a time
        history = ContainerHistory(
            series=[s for parts in each.values() for s in parts],
            oom_kills=sum(oom.get(sid, 0) for sid in sids),
            startups=[run for sid in sids for run in startups.get(sid, [])],
        )
        containers[key][container] = recommend(history, settings=settings.strategy, window=settings.window)
        latest = max(sids, key=lambda sid: max(s.last for s in each[sid]))
        if requests.get(latest):
            current[key][container] = requests[latest]
    attach_totals(containers, totals_f.result(), owners=owners, series=stats)
    drawn = summarize(
        prom, namespaces=ns, rate_window=collector.rate, recorded=settings.cpu_rate_metric, owners=owners,
        end=end, days=settings.summary_days, progress=progress,
    ) if settings.summary_days > 0 else {}
    workloads = {
        key: WorkloadEntry(
            dict(profiles), dict(current.get(key, {})),
            {name: found for name, found in drawn.get(key, {}).items() if name in profiles},
        )
        for key, profiles in containers.items()
    }
    stamp = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime(end))
    partial = " (PARTIAL: Prometheus sent warnings)" if prom.warnings else ""
    document = ProfileDocument(
        workloads=workloads,
        generated_at=end,
        source=f"prometheus {prom.url}, {settings.window} to {stamp}{partial}",
        window=settings.window,
    )
    progress(
        f"built {len(workloads)} workloads, {len(histories)} containers from {len(stats)} series "
        f"in {time.monotonic() - started:.1f}s with {prom.queries} queries"
    )
    if checkpoint is not None and working is not None and not prom.warnings:
        checkpoint.slices, checkpoint.unit = working.slices, working.unit
    return BuildResult(
        document=document,
        queries=prom.queries,
        seconds=time.monotonic() - started,
        warnings=tuple(prom.warnings),
        series=len(stats),
        reused_slices=working.reused if working is not None else 0,
        notes=tuple(notes),
    )


class IncrementalBuild:
    """Builds again and again from one Prometheus, the past days kept in memory between them (what
    `serve` does with a Prometheus URL)."""

    def __init__(self, connection: PrometheusConnection, settings: BuildSettings) -> None:
        self.connection, self.settings = connection, settings
        self.checkpoint = Checkpoint(settings.checkpoint_key(connection.identity))

    def __call__(self, *, end: float | None = None) -> BuildResult:
        prom = self.connection.open()
        try:
            return build_profiles(prom, self.settings, end=end, checkpoint=self.checkpoint)
        finally:
            prom.close()
