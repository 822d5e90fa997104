"""Prometheus -> strategy -> store: one profile build.

A build issues a fixed handful of queries for the whole scope (all namespaces, or the ones named):
owners, OOM kills, current requests, the scrape interval, CPU quantiles, memory peaks with start
times, short-lived Pods' usage, and two small start-up range queries, a few at a time. When
Prometheus refuses the big ones for loading too many samples, their time span is halved and asked
again, so a large cluster costs a few more queries, never one per Pod.
"""

from __future__ import annotations

import itertools
import math
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from decimal import Decimal

from webhook.core.profile import ContainerProfile
from webhook.core.workload import WorkloadKey
from webhook.profiles import queries
from webhook.profiles.identity import Owners
from webhook.profiles.prometheus import Prometheus, Sample, TooManySamplesError
from webhook.profiles.store import ProfileDocument, WorkloadEntry
from webhook.profiles.strategy import ContainerHistory, SeriesStats, StrategySettings, recommend

__all__ = ["BuildResult", "BuildSettings", "build_profiles"]

Progress = Callable[[str], None]
_SeriesId = tuple[str, str, str]  # namespace, pod, container
_Slice = tuple[float, float]  # (start, end) of a time slice
_Value = tuple[_Slice, _SeriesId, str, float]  # one answer: slice, series, stat, value
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
    slices: int = 0
    samples_per_query: int = 40_000_000  # Prometheus' --query.max-samples is 50 M by default
    namespaces: tuple[str, ...] = ()  # empty: every namespace
    # Series with fewer samples than this (short-lived Pods: Jobs, churn) are fetched whole, so their
    # share of the pooled percentile is exact rather than interpolated between a few quantiles.
    raw_limit: int = 200
    raw_budget: int = 2_000_000  # at most this many values fetched whole per build (memory bound)
    strategy: StrategySettings = field(default_factory=StrategySettings)

    def __post_init__(self) -> None:
        for name in ("window", "step", "rate_window", "coverage_step", "startup_lookback"):
            queries.duration(getattr(self, name))  # raises ValueError naming the bad text
        if queries.duration(self.step) > queries.duration(self.window):
            raise ValueError(f"step {self.step} is longer than the window {self.window}")


@dataclass(frozen=True, slots=True)
class BuildResult:
    document: ProfileDocument
    queries: int
    seconds: float
    warnings: tuple[str, ...]
    series: int


def _noop(_: str) -> None:
    return None


class _Collector:
    def __init__(self, prom: Prometheus, settings: BuildSettings, *, end: float, progress: Progress) -> None:
        self.prom, self.settings, self.end, self.progress = prom, settings, end, progress
        self.window = queries.duration(settings.window)
        self.step = queries.duration(settings.step)
        self.rate = queries.duration(settings.rate_window)
        self.ns: Sequence[str] = settings.namespaces
        self.slices = max(1, settings.slices)
        self._ids: dict[tuple[str | None, str | None, str | None], _SeriesId] = {}

    def compact(self, bounds: _Slice, samples: list[Sample]) -> list[_Value]:
        """Samples as small tuples sharing one id per series: a large build holds a million of them."""
        out: list[_Value] = []
        ids = self._ids
        for sample in samples:
            labels = sample.labels
            key = (labels.get("namespace"), labels.get("pod"), labels.get("container"))
            sid = ids.get(key)
            if sid is None:
                found = _series_id(dict(labels))
                if found is None:
                    continue
                sid = ids.setdefault(key, tuple(sys.intern(part) for part in found))  # type: ignore[arg-type]
            out.append((bounds, sid, sys.intern(labels.get("stat", "")), sample.value))
        return out

    def sliced(
        self, pool: ThreadPoolExecutor, makers: dict[str, Callable[[int], str]]
    ) -> dict[str, list[_Value]]:
        """Ask every `makers[name](span)` at the end of each time slice, all slices cut alike.

        Starts with `slices` slices of the window; when Prometheus refuses any query of a slice (too
        many samples, timeout), that slice is halved for all of them, so the answers join slice by
        slice.
        """
        pending = _cut(self.end - self.window, self.end, pieces=self.slices, step=self.step)
        out: dict[str, list[_Value]] = {name: [] for name in makers}
        done = 0
        while pending:
            lo, hi = pending.pop()
            span = round(hi - lo)
            futures = {
                name: pool.submit(self.prom.instant, make(span), at=hi) for name, make in makers.items()
            }
            waited = time.monotonic()
            while not_done := [name for name, future in futures.items() if not future.done()]:
                wait([futures[name] for name in not_done], timeout=_HEARTBEAT)
                if any(not futures[name].done() for name in not_done):
                    running = ", ".join(name for name in not_done if not futures[name].done())
                    self.progress(f"  still reading {running} ({time.monotonic() - waited:.0f}s)")
            try:
                answers = {name: future.result() for name, future in futures.items()}
            except TooManySamplesError:
                for future in futures.values():
                    future.cancel()
                if span <= _MIN_SLICE:
                    raise
                middle = lo + (span // 2 // self.step) * self.step
                pending += [(lo, middle), (middle, hi)]
                refused = queries.promql_duration(span)
                self.progress(f"  Prometheus refused {refused} at once: splitting it in two")
                continue
            for name, samples in answers.items():
                out[name] += self.compact((lo, hi), samples)
            del answers, futures
            done += 1
        for name, items in out.items():
            self.progress(f"  {name}: {len(items)} series values from {done} slice(s)")
        return out


def auto_slices(*, series: float, window: int, interval: float, samples_per_query: int) -> int:
    """Slices that keep one pass over `series` live series under `samples_per_query` samples.

    Churn replaces Pods rather than adding to them, so the live series times the samples each takes
    in the window is the pass' size. At most one slice per hour.
    """
    if series <= 0 or interval <= 0:
        return 1
    samples = series * window / interval
    return max(1, min(math.ceil(samples / samples_per_query), window // 3600 or 1))


def _cut(lo: float, hi: float, *, pieces: int, step: int) -> list[tuple[float, float]]:
    """[lo, hi] in `pieces` slices on the step grid, last slice first in the returned stack."""
    width = max(step, int((hi - lo) / max(1, pieces)) // step * step)
    bounds = [lo + i * width for i in range(max(1, pieces))] + [hi]
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def _series_id(labels: dict[str, str] | object) -> _SeriesId | None:
    if not isinstance(labels, dict):
        return None
    ns, pod, container = labels.get("namespace"), labels.get("pod"), labels.get("container")
    if not ns or not pod or not container:
        return None
    return ns, pod, container


def _slice_stats(
    memory: list[_Value],
    cpu: list[_Value],
    *,
    interval: float,
    seen: dict[_SeriesId, tuple[float, float]],
) -> dict[_SeriesId, list[SeriesStats]]:
    """Join the memory and CPU answers per (series, slice) into `SeriesStats`.

    A series' life in a slice starts at its container start (or the slice start) and lasts its
    sample count times the scrape `interval`; `seen` (first/last from the coverage fallback) is
    used for series without a start time.
    """
    mem: dict[tuple[_SeriesId, _Slice], dict[str, float]] = defaultdict(dict)
    for bounds, sid, stat, value in memory:
        mem[(sid, bounds)][stat] = value
    by_slice: dict[tuple[_SeriesId, _Slice], dict[float, float]] = defaultdict(dict)
    for bounds, sid, stat, value in cpu:
        if stat.startswith("q"):
            by_slice[(sid, bounds)][float(stat[1:])] = max(value, 0.0)
    out: dict[_SeriesId, list[SeriesStats]] = defaultdict(list)
    for (sid, (lo, hi)), stats in mem.items():
        if "count" not in stats:
            continue
        count = int(stats["count"])
        if "start" in stats:
            first = min(hi, max(lo, stats["start"]))
            last = min(hi, first + (count - 1) * interval)
        elif sid in seen:
            first, last = max(lo, seen[sid][0]), min(hi, seen[sid][1])
        else:  # nothing says when: the count alone, placed at the end of the slice
            first, last = max(lo, hi - (count - 1) * interval), hi
        out[sid].append(
            SeriesStats(
                samples=count,
                first=first,
                last=max(first, last),
                memory_peak=stats.get("max"),
                cpu_quantiles=by_slice.get((sid, (lo, hi)), {}),
            )
        )
    return out


def _seen_without_start(
    prom: Prometheus, settings: BuildSettings, memory: list[_Value], *, end: float
) -> dict[_SeriesId, tuple[float, float]]:
    """First and last time seen for series without a container start time (one subquery, coarse)."""
    stats: dict[_SeriesId, set[str]] = defaultdict(set)
    for _, sid, stat, _ in memory:
        stats[sid].add(stat)
    if all("start" in names for names in stats.values()):
        return {}
    step = queries.duration(settings.coverage_step)
    window = queries.duration(settings.window)
    answer = prom.instant(queries.coverage(settings.namespaces, span=window, coverage_step=step), at=end)
    found: dict[_SeriesId, dict[str, float]] = defaultdict(dict)
    for sample in answer:
        key = _series_id(dict(sample.labels))
        if key is not None:
            found[key][sample.labels.get("stat", "")] = sample.value
    # Seen at coverage steps: the life extends half a step beyond the first and last on average.
    return {
        sid: (v["first"] - step / 2, v["last"] + step / 2)
        for sid, v in found.items()
        if "first" in v and "last" in v
    }


def _fetch_short_series(
    prom: Prometheus, settings: BuildSettings, stats: dict[_SeriesId, list[SeriesStats]], *, end: float
) -> None:
    """Replace the quantile summaries of short series by all their values (one query per 500 Pods)."""
    sizes = {sid: sum(p.samples for p in parts) for sid, parts in stats.items()}
    short, budget = [], settings.raw_budget
    for sid in sorted(sizes, key=lambda sid: (sizes[sid], sid)):
        if sizes[sid] >= settings.raw_limit or sizes[sid] > budget:
            break
        short.append(sid)
        budget -= sizes[sid]
    pods = sorted({(sid[0], sid[1]) for sid in short})
    values: dict[_SeriesId, list[float]] = defaultdict(list)
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
            found = _series_id(dict(series.labels))
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


def _startups(
    prom: Prometheus, settings: BuildSettings, *, start: float, end: float
) -> dict[_SeriesId, list[list[tuple[float, float]]]]:
    """Start-up CPU points per series, split into one list per container start (age resets)."""
    step = queries.duration(settings.step)
    limit = settings.strategy.startup_window_seconds
    usage_q = queries.startup_cpu(
        settings.namespaces,
        rate_window=queries.duration(settings.rate_window),
        startup_window=limit,
        recorded=settings.cpu_rate_metric,
    )
    age_q = queries.container_age(settings.namespaces, startup_window=limit)
    answer = prom.range(usage_q, start=start, end=end, step=step)
    usage = {_series_id(dict(s.labels)): dict(s.points) for s in answer}
    out: dict[_SeriesId, list[list[tuple[float, float]]]] = defaultdict(list)
    for series in prom.range(age_q, start=start, end=end, step=step):
        sid = _series_id(dict(series.labels))
        points = usage.get(sid)
        if sid is None or not points:
            continue
        runs: list[list[tuple[float, float]]] = []
        last_age = None
        for t, age in series.points:
            if t not in points:
                continue
            if last_age is None or age < last_age:
                runs.append([])
            runs[-1].append((age, max(points[t], 0.0)))
            last_age = age
        out[sid] += [run for run in runs if run]
    return out


def build_profiles(
    prom: Prometheus, settings: BuildSettings, *, end: float | None = None, progress: Progress = _noop
) -> BuildResult:
    """Read the window from Prometheus and return a complete document; raises PrometheusError."""
    started = time.monotonic()
    end = time.time() if end is None else end
    collector = _Collector(prom, settings, end=end, progress=progress)
    window, ns = collector.window, settings.namespaces
    scope = ", ".join(ns) if ns else "all namespaces"
    progress(f"reading {settings.window} of history from {prom.url} ({scope})")
    grid = settings.strategy.quantile_grid()
    lookback = min(window, queries.duration(settings.startup_lookback))
    with ThreadPoolExecutor(max_workers=max(2, settings.concurrency)) as pool:
        # The small queries and the start-up range query go first, then the two big passes overlap.
        startups_f = pool.submit(_startups, prom, settings, start=end - lookback, end=end)
        owners_f = pool.submit(prom.instant, queries.owners_query(ns, span=window), at=end)
        oom_f = pool.submit(prom.instant, queries.oom_kills(ns, span=window), at=end)
        requests_f = pool.submit(prom.instant, queries.requests_query(ns, span=window), at=end)
        # The scrape interval and the live series size the big passes: asked first, it is one small query.
        sizes = {s.labels.get("stat"): s.value for s in prom.instant(queries.scrape_interval(ns), at=end)}
        per_hour, live = sizes.get("per_hour", 0.0), sizes.get("series", 0.0)
        interval = 3600 / per_hour if per_hour > 0 else float(collector.step)
        if not settings.slices:
            collector.slices = auto_slices(series=live, window=window, interval=interval,
                                           samples_per_query=settings.samples_per_query)
            progress(f"  {live:.0f} live series every {interval:g}s: the big passes in "
                     f"{collector.slices} slice(s)")
        answers = collector.sliced(
            pool,
            {
                "cpu": lambda span: queries.cpu_stats(
                    ns,
                    span=span,
                    step=collector.step,
                    rate_window=collector.rate,
                    quantiles=grid,
                    recorded=settings.cpu_rate_metric,
                ),
                "memory": lambda span: queries.memory_stats(ns, span=span),
            },
        )
        owners = Owners.from_samples(owners_f.result())
        progress(f"  owners: {len(owners.pods)} pods known to kube-state-metrics")
        seen = _seen_without_start(prom, settings, answers["memory"], end=end)
        stats = _slice_stats(answers["memory"], answers["cpu"], interval=interval, seen=seen)
        _fetch_short_series(prom, settings, stats, end=end)
        oom: dict[_SeriesId, int] = {}
        for sample in oom_f.result():
            sid = _series_id(dict(sample.labels))
            if sid is not None:
                oom[sid] = 1
        requests: dict[_SeriesId, dict[str, Decimal]] = defaultdict(dict)
        for sample in requests_f.result():
            sid, resource = _series_id(dict(sample.labels)), sample.labels.get("resource")
            if sid is not None and resource in {"cpu", "memory"}:
                requests[sid][resource] = Decimal(repr(sample.value))
        startups = startups_f.result()
    progress(f"  start-up: {sum(len(v) for v in startups.values())} container starts seen")

    histories: dict[tuple[WorkloadKey, str], list[_SeriesId]] = defaultdict(list)
    for sid in stats:
        histories[(owners.workload(sid[0], sid[1]), sid[2])].append(sid)
    containers: dict[WorkloadKey, dict[str, ContainerProfile]] = defaultdict(dict)
    current: dict[WorkloadKey, dict[str, dict[str, Decimal]]] = defaultdict(dict)
    for (key, container), sids in histories.items():
        history = ContainerHistory(
            series=[s for sid in sids for s in stats[sid]],
            oom_kills=sum(oom.get(sid, 0) for sid in sids),
            startups=[run for sid in sids for run in startups.get(sid, [])],
        )
        containers[key][container] = recommend(history, settings=settings.strategy, window=settings.window)
        latest = max(sids, key=lambda sid: max(s.last for s in stats[sid]))
        if requests.get(latest):
            current[key][container] = requests[latest]
    workloads = {
        key: WorkloadEntry(dict(profiles), dict(current.get(key, {})))
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
    return BuildResult(
        document=document,
        queries=prom.queries,
        seconds=time.monotonic() - started,
        warnings=tuple(prom.warnings),
        series=len(stats),
    )
