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
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal

from webhook.core.profile import ContainerProfile, Recommendation
from webhook.core.statistic import CpuStatistic
from webhook.core.workload import WorkloadKey
from webhook.profiles import queries
from webhook.profiles.budgets import BuildSettings, fleet_budget, totals_pieces
from webhook.profiles.checkpoint import Checkpoint
from webhook.profiles.connection import PrometheusConnection
from webhook.profiles.cpustat import exact_cpu
from webhook.profiles.identity import read_owners
from webhook.profiles.passes import Meter, Passes
from webhook.profiles.prometheus import Prometheus, PrometheusError, Sample
from webhook.profiles.resolution import Resolution, choose, points
from webhook.profiles.shards import Shard, estimate, plan
from webhook.profiles.shortseries import fetch_short_series, seen_without_start
from webhook.profiles.sizing import Live, Scrape, read_scrape
from webhook.profiles.slices import (
    SeriesId,
    StatsBySeries,
    auto_slices,
    series_id,
)
from webhook.profiles.startups import StartupReads, read_startups
from webhook.profiles.store import ProfileDocument, WorkloadEntry
from webhook.profiles.strategy import ContainerHistory, recommend, round_up
from webhook.profiles.summarize import summarize
from webhook.profiles.totals import Scope, attach_totals, fetch_totals, hpa_scope

__all__ = ["BuildResult", "BuildSettings", "IncrementalBuild", "build_profiles"]

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class BuildResult:
    document: ProfileDocument
    queries: int
    seconds: float
    warnings: tuple[str, ...]
    series: int
    reused_slices: int = 0  # slices taken from the checkpoint instead of Prometheus
    notes: tuple[str, ...] = ()  # settings the build had to change, what it cannot read (shown with -q)
    # Namespaces the big passes could not read entirely, with why: the document has none of their
    # workloads (the caller keeps the previous ones), never a "no data" for them.
    unread: tuple[tuple[str, str], ...] = ()
    samples_read: int = 0  # as Prometheus counted them
    peak_samples: int = 0  # the most samples one query held at once (what --query.max-samples limits)
    refusals: int = 0  # queries Prometheus refused that were split and asked again


def _noop(_: str) -> None:
    return None


def _planned_passes(
    prom: Prometheus,
    settings: BuildSettings,
    *,
    scrape: Scrape,
    end: float,
    progress: Progress,
    checkpoint: Checkpoint | None,
    meter: Meter | None,
) -> Passes:
    """The big passes' time slices and shards, from the live series of each namespace and container."""
    window, step = queries.duration(settings.window), queries.duration(settings.step)
    live, interval = scrape.live, scrape.interval()
    total = _total(live)
    # A CPU subquery holds a point per step, the memory pass one per raw sample: the finer counts.
    slices = settings.slices or auto_slices(series=total, window=window,
                                            interval=min(step, interval) if interval > 0 else step,
                                            samples_per_query=settings.samples_per_query)
    span = window / slices
    resolution = {ns: min(step, found) if found > 0 else step for ns, found in scrape.intervals().items()}
    finest = min(resolution.values(), default=float(step))
    known: list[str] = list(settings.namespaces)

    def namespaces() -> list[str]:
        """Every namespace with history in the window (an index lookup, asked when first needed)."""
        if not known:
            selector = queries.selector(queries.MEMORY_METRIC)
            known.extend(prom.label_values("namespace", match=selector, start=end - window, end=end))
        return known

    shards = [Shard()]
    if estimate(total, span=span, resolution=finest) > settings.max_samples:
        counts: Live = {namespace: {} for namespace in namespaces()} | live
        shards = plan(counts, span=span, resolution=resolution, budget=settings.max_samples)
    sharded = f" x {len(shards)} shards of <= {settings.max_samples:,} samples" if len(shards) > 1 else ""
    progress(f"  {total:.0f} live series every {interval:g}s at a {step}s step: the big passes in "
             f"{slices} slice(s)"
             + (" or more, on whole days" if checkpoint else "") + sharded)
    planned = dataclasses.replace(settings, slices=slices)
    return Passes(prom, settings=planned, end=end, shards=shards, namespaces=namespaces,
                  progress=progress, checkpoint=checkpoint, meter=meter)


def _resolved(settings: BuildSettings, resolution: Resolution) -> BuildSettings:
    """`settings` at the step and rate window `resolution` chose (what every query of the build uses)."""
    return dataclasses.replace(settings, step=queries.promql_duration(resolution.step),
                               rate_window=queries.promql_duration(resolution.rate_window))


def _total(live: Live) -> float:
    return sum(sum(containers.values()) for containers in live.values())


def _pods_known(asked: Future[list[Sample]]) -> float | None:
    """How many Pods kube-state-metrics reported in the last hour (`queries.hpa_targets`); None if unknown."""
    try:
        found = [sample.value for sample in asked.result() if sample.labels.get("stat") == "pods"]
    except PrometheusError:
        return None
    return found[0] if found else None


def _scope(asked: Future[list[Sample]]) -> Scope:
    """Which workloads' totals to ask for (`totals.hpa_scope`); every one when Prometheus cannot say."""
    try:
        return hpa_scope(asked.result())
    except PrometheusError:
        return None


def build_profiles(
    prom: Prometheus,
    settings: BuildSettings,
    *,
    end: float | None = None,
    progress: Progress = _noop,
    checkpoint: Checkpoint | None = None,
    meter: Meter | None = None,
) -> BuildResult:
    """Read the window from Prometheus and return a complete document; raises PrometheusError.

    Namespaces the big passes could not read are left out of the document and named in `unread`.

    With a `checkpoint` (for `settings.checkpoint_key(prom.url)`), the slices it holds are not asked
    again and the whole slices this build asks are added to it, unless Prometheus sent warnings;
    the caller persists it.
    """
    started = time.monotonic()
    end = time.time() if end is None else end
    scope = ", ".join(settings.namespaces) if settings.namespaces else "all namespaces"
    progress(f"reading {settings.window} of history from {prom.url} ({scope})")
    if checkpoint is not None and checkpoint.note:
        progress(f"  {checkpoint.note}")
    prom.bound(settings.concurrency)
    # The summaries are asked once the passes and the exact CPU fetch are in, while the strategy runs
    # here (a few seconds of Python during which Prometheus would otherwise wait).
    drawing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="summaries")
    try:
        return _build(prom, settings, end=end, progress=progress, checkpoint=checkpoint, meter=meter,
                      started=started, drawing=drawing)
    finally:
        drawing.shutdown(wait=True, cancel_futures=True)


def _build(
    prom: Prometheus,
    settings: BuildSettings,
    *,
    end: float,
    progress: Progress,
    checkpoint: Checkpoint | None,
    meter: Meter | None,
    started: float,
    drawing: Executor,
) -> BuildResult:
    """`build_profiles`' body; `drawing` runs the summaries' pass."""
    # Worked on as a copy and handed back only if no answer came with warnings: partial answers
    # are never kept, whoever keeps the checkpoint (the command's file, `serve`'s memory).
    working = checkpoint.copy() if checkpoint is not None else None
    asked_rate = settings.rate_window  # `auto` or a duration: what a policy's statistic names
    asked_step = settings.step  # `auto` or a duration: a policy's statistic resolves as the build did
    window, ns = queries.duration(settings.window), settings.namespaces
    lookback = min(window, queries.duration(settings.startup_lookback))
    notes: list[str] = []
    with ThreadPoolExecutor(max_workers=max(4, settings.concurrency)) as pool:
        # The small queries go first, then the two big passes, then what the passes point to.
        owners_f = pool.submit(read_owners, prom, ns, start=end - window, end=end)
        oom_f = pool.submit(prom.instant, queries.oom_kills(ns, span=window), at=end)
        requests_f = pool.submit(prom.instant, queries.requests_query(ns, span=window), at=end)
        hpas_f = pool.submit(prom.instant, queries.hpa_targets(ns, span=window), at=end)
        # The scrape interval and the live series size the big passes (and the rate window every CPU
        # query uses): asked first, one small query (its median over a share of the Pods, when
        # kube-state-metrics says there are many).
        scrape = read_scrape(prom, ns, end=end, pods=_pods_known(hpas_f), start=end - window)
        resolution = choose(step=settings.step, rate_window=settings.rate_window, interval=scrape.interval(),
                            recorded=settings.cpu_rate_metric is not None)
        settings, rate, step = _resolved(settings, resolution), resolution.rate_window, resolution.step
        interval = scrape.interval() or float(step)
        for raised in resolution.notes:
            notes.append(raised)
            progress(f"  warning: {raised}")
        progress(f"  reading at a {resolution.describe()}")
        # The heavy queries (the passes, the start-ups, the top fetch) of a small fleet hold a share
        # of its points (`budgets.fleet_budget`); the summaries and the totals keep the whole budget.
        fleet = points(_total(scrape.live), span=window, step=step, interval=scrape.interval())
        largest = points(max((n for found in scrape.live.values() for n in found.values()), default=0.0),
                         span=window, step=step, interval=scrape.interval())
        budget = fleet_budget(fleet, ceiling=settings.max_samples, largest=largest)
        heavy = dataclasses.replace(settings, max_samples=budget)
        if working is not None:
            working.resolve(f"{settings.step}/{settings.rate_window}")
        totals_f = pool.submit(fetch_totals, prom, namespaces=ns, window=window, step=step,
                               rate_window=rate, end=end, recorded=settings.cpu_rate_metric,
                               progress=progress, live=_total(scrape.live),
                               pieces=lambda n: totals_pieces(settings, n),
                               scope=_scope(hpas_f), checkpoint=working)
        passes = _planned_passes(prom, heavy, scrape=scrape, end=end, progress=progress,
                                 checkpoint=working, meter=meter)
        reading: list[Future[StartupReads]] = []
        startup_window = settings.strategy.startup_window_seconds
        found = passes.read(
            recent=end - lookback,
            on_recent=lambda recent: reading.append(
                pool.submit(read_startups, prom, heavy, recent, since=end - lookback, end=end,
                            reach=resolution.startup_reach(startup_window), step=resolution.startup_step)
            ),
        )
        if working is not None:
            working.prune(before=end - window)
        owners = owners_f.result()
        progress(f"  owners: {len(owners.pods)} pods known to kube-state-metrics")
        seen = seen_without_start(prom, settings, found, end=end)
        intervals = {namespace: found for namespace, found in scrape.intervals().items() if found > 0}
        stats = StatsBySeries(found, interval=intervals or interval, seen=seen, since=end - window,
                              grid=settings.cpu_grid())
        if not settings.exact_cpu:
            # Exact: the top fetch reads every series' points above its pool's floor, short ones too,
            # so their every value (a range of every step per series: Prometheus' heap) is not needed.
            fetch_short_series(prom, heavy, stats, end=end, pool=pool)
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
        startups, started_recently = startups_f.result()
    read = sum(len(v) for v in startups.values())
    progress(f"  start-up: {read} of {started_recently} container starts in the last "
             f"{queries.promql_duration(int(lookback))} read")
    unseen = resolution.startup_unseen(startup_window)
    if unseen is not None and read < started_recently:  # said, not a silent 0 (or a silent few)
        notes.append(unseen)
        progress(f"  warning: {unseen}")

    histories: dict[tuple[WorkloadKey, str], list[SeriesId]] = defaultdict(list)
    for sid in stats:
        histories[(owners.workload(sid[0], sid[1]), sid[2])].append(sid)
    containers: dict[WorkloadKey, dict[str, ContainerProfile]] = defaultdict(dict)
    current: dict[WorkloadKey, dict[str, dict[str, Decimal]]] = defaultdict(dict)
    # One batch more than in flight (`Prometheus.bound`): its count, filter and reading follow each other.
    workers = max(1, settings.concurrency) + 1
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="exact") as counting:
        finest = min(intervals.values(), default=interval)
        refused = prom.refusals
        exact = exact_cpu(prom, heavy, stats, histories, end=end, pool=counting, interval=finest,
                          progress=progress) if settings.exact_cpu else {}
        own = CpuStatistic(settings.strategy.cpu_percentile, settings.strategy.cpu_aggregate, asked_rate)
        others: dict[tuple[WorkloadKey, str], dict[str, Decimal]] = defaultdict(dict)
        for statistic in sorted(set(settings.statistics) - {own}):
            progress(f"  CPU statistic {statistic.key} for the policies that name it")
            # Its rate window resolved as the build's (two intervals at least), read at the build's step.
            its = choose(step=asked_step, rate_window=statistic.rate_window, interval=scrape.interval(),
                         recorded=settings.cpu_rate_metric is not None)
            counted = exact_cpu(prom, heavy, stats, histories, end=end, pool=counting, progress=progress,
                                interval=finest, statistic=dataclasses.replace(
                                    statistic, rate_window=queries.promql_duration(its.rate_window)))
            strategy = settings.strategy
            for pair, (value, _) in counted.items():
                others[pair][statistic.key] = round_up(value, strategy.cpu_step, strategy.min_cpu)
        refused = prom.refusals - refused  # the top fetch's batches the server refused, asked in halves
    # After the exact CPU fetch, not beside it: Prometheus' heap holds one pass's queries at a time (beside
    # it, on the 60 s peer set, 198 MiB against 144 for the top fetch alone), in as long (both fill the
    # two queries in flight); they run while the strategy does.
    drawn_f = drawing.submit(
        summarize, prom, namespaces=ns, rate_window=rate, recorded=settings.cpu_rate_metric,
        owners=owners, end=end, days=settings.summary_days, progress=progress, checkpoint=working,
        interval=interval, series=_total(scrape.live), budget=settings.max_samples,
        # Each summaries query selects every series of the fleet, whatever its piece: a small fleet's
        # (`fleet_budget`) are asked one at a time, which halves Prometheus' heap for a second or two.
        parallel=1 if heavy.max_samples < settings.max_samples else 2,
    ) if settings.summary_days > 0 else None
    for (key, container), sids in histories.items():
        each = {sid: stats[sid] for sid in sids}  # made here, dropped after: one container at a time
        history = ContainerHistory(
            series=[s for parts in each.values() for s in parts],
            oom_kills=sum(oom.get(sid, 0) for sid in sids),
            startups=[run for sid in sids for run in startups.get(sid, [])],
            cpu_exact=exact.get((key, container)),
            resolution=(settings.step, settings.rate_window),
        )
        profile = recommend(history, settings=settings.strategy, window=settings.window)
        if isinstance(profile, Recommendation) and others.get((key, container)):
            profile = dataclasses.replace(profile, cpu_by=others[(key, container)])
        containers[key][container] = profile
        latest = max(sids, key=lambda sid: max(s.last for s in each[sid]))
        if requests.get(latest):
            current[key][container] = requests[latest]
    attach_totals(containers, totals_f.result(), owners=owners, series=stats)
    drawn = drawn_f.result() if drawn_f is not None else {}
    unread = _unread_namespaces(passes)
    workloads = {
        key: WorkloadEntry(
            dict(profiles), dict(current.get(key, {})),
            {name: found for name, found in drawn.get(key, {}).items() if name in profiles},
        )
        for key, profiles in containers.items()
        if key.namespace not in unread
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
        checkpoint.settle(working, before=end - window)
    return BuildResult(
        document=document,
        queries=prom.queries,
        seconds=time.monotonic() - started,
        warnings=tuple(prom.warnings),
        series=len(stats),
        reused_slices=working.reused if working is not None else 0,
        notes=tuple(notes),
        unread=tuple(sorted(unread.items())),
        samples_read=prom.samples_read,
        peak_samples=prom.peak_samples,
        refusals=passes.refusals + refused,
    )


def _unread_namespaces(passes: Passes) -> dict[str, str]:
    """Each namespace some piece of the passes could not read, with the first reason; raises when
    that is every namespace of the scope (the build read nothing it could write)."""
    out: dict[str, str] = {}
    for piece in passes.unread:
        for namespace in piece.shard.namespaces or passes.namespaces():
            out.setdefault(namespace, piece.reason)
    if out and set(out) >= set(passes.namespaces()):
        first = next(iter(out.values()))
        raise PrometheusError(f"the big passes could not be read for any namespace of the scope: {first}")
    return out


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
