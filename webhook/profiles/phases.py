"""The phases of one profile build, in the order `build.build_profiles` runs them, over one plan object.

Each phase reads what the plan (`BuildPlan`) and the phases before it hold, and adds to it; its
docstring says which. The phases before the strategy ask Prometheus in the background where they can
(the small reads, the totals, the start-ups, the summaries), so that it always has the build's
`concurrency` queries to work on; what each read may cost is planned in `budgets`.
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal

from webhook.core.model.profile import ContainerProfile, Recommendation
from webhook.core.model.workload import WorkloadKey
from webhook.core.policy.statistic import CpuStatistic
from webhook.profiles import queries
from webhook.profiles.budgets import BuildSettings, fleet_budget, totals_pieces
from webhook.profiles.checkpoint import Checkpoint
from webhook.profiles.cpustat import Container, exact_cpu
from webhook.profiles.identity import Owners, read_owners
from webhook.profiles.passes import Meter, Passes, plan_passes
from webhook.profiles.prometheus import Prometheus, PrometheusError, Sample
from webhook.profiles.resolution import Resolution, choose, points
from webhook.profiles.shortseries import fetch_short_series, seen_without_start
from webhook.profiles.sizing import Scrape, read_scrape
from webhook.profiles.slices import SeriesId, SliceRecords, StatsBySeries, series_id
from webhook.profiles.startups import StartupReads, read_startups
from webhook.profiles.store import ProfileDocument, WorkloadEntry
from webhook.profiles.strategy import ContainerHistory, recommend, round_up
from webhook.profiles.summarize import summarize
from webhook.profiles.summary import UsageSummary
from webhook.profiles.totals import Peaks, Scope, attach_totals, fetch_totals, hpa_scope

__all__ = [
    "BuildPlan", "Progress", "SmallReads", "ask_small_reads", "ask_summaries", "ask_totals",
    "assemble_document", "choose_resolution", "collect_startups", "complete_series", "count_exact_cpu",
    "read_kube_state", "read_passes", "recommend_containers",
]

Progress = Callable[[str], None]
Runs = list[list[tuple[float, float]]]  # a series' start-ups: (seconds since its start, cores) each
Drawn = dict[WorkloadKey, dict[str, UsageSummary]]  # the summaries by workload and container


@dataclass(frozen=True, slots=True)
class SmallReads:
    """The small queries a build asks first, in the background: kube-state-metrics' view of the scope."""

    owners: Future[Owners]
    oom: Future[list[Sample]]
    requests: Future[list[Sample]]
    hpas: Future[list[Sample]]  # `queries.hpa_targets`: what HPAs scale, and how many Pods there are


@dataclass(slots=True, eq=False)
class BuildPlan:
    """One build in progress: its inputs, and what each phase adds (set once, by the phase named)."""

    prom: Prometheus
    asked: BuildSettings  # as the caller gave them (`auto` step and rate window)
    end: float
    progress: Progress
    meter: Meter | None
    # Worked on as a copy and handed back only if no answer came with warnings: partial answers are
    # never kept, whoever keeps the checkpoint (the command's file, `serve`'s memory).
    working: Checkpoint | None
    started: float  # time.monotonic() when the build started
    notes: list[str] = field(default_factory=list)  # what the build had to change or cannot read
    # `ask_small_reads`
    small: SmallReads = field(init=False)
    # `choose_resolution`
    scrape: Scrape = field(init=False)
    resolution: Resolution = field(init=False)
    settings: BuildSettings = field(init=False)  # `asked` at the chosen step and rate window
    heavy: BuildSettings = field(init=False)  # the same at the heavy queries' budget (`fleet_budget`)
    interval: float = field(init=False)  # seconds between samples (the step when unknown)
    # `ask_totals`
    totals: Future[Peaks] = field(init=False)
    # `read_passes`
    passes: Passes = field(init=False)
    records: SliceRecords = field(init=False)
    startups_asked: Future[StartupReads] = field(init=False)
    # `complete_series`
    owners: Owners = field(init=False)
    intervals: dict[str, float] = field(init=False)  # per namespace, where known
    stats: StatsBySeries = field(init=False)
    histories: dict[Container, list[SeriesId]] = field(init=False)  # a workload's container: its series
    # `read_kube_state`
    oom: dict[SeriesId, int] = field(init=False)
    requests: dict[SeriesId, dict[str, Decimal]] = field(init=False)
    # `collect_startups`
    startups: dict[SeriesId, Runs] = field(init=False)
    # `count_exact_cpu`
    exact: dict[Container, tuple[float, float]] = field(init=False)
    cpu_by: dict[Container, dict[str, Decimal]] = field(init=False)  # the policies' other statistics
    refused: int = field(init=False)  # the top fetch's batches refused and asked again in halves
    # `recommend_containers`
    containers: dict[WorkloadKey, dict[str, ContainerProfile]] = field(init=False)
    current: dict[WorkloadKey, dict[str, dict[str, Decimal]]] = field(init=False)
    # `assemble_document`
    unread: dict[str, str] = field(init=False)  # the namespaces the passes could not read, and why

    @property
    def window(self) -> int:
        return queries.duration(self.asked.window)

    @property
    def lookback(self) -> int:
        """How far back the start-ups are read (`startup_lookback`, within the window)."""
        return min(self.window, queries.duration(self.asked.startup_lookback))


def ask_small_reads(plan: BuildPlan, pool: Executor) -> None:
    """Asks the small queries first, in the background. Adds `small`."""
    prom, ns, window, end = plan.prom, plan.asked.namespaces, plan.window, plan.end
    plan.small = SmallReads(
        owners=pool.submit(read_owners, prom, ns, start=end - window, end=end),
        oom=pool.submit(prom.instant, queries.oom_kills(ns, span=window), at=end),
        requests=pool.submit(prom.instant, queries.requests_query(ns, span=window), at=end),
        hpas=pool.submit(prom.instant, queries.hpa_targets(ns, span=window), at=end),
    )


def choose_resolution(plan: BuildPlan) -> None:
    """Measures the data (its scrape interval, the live series) and chooses from it the step and rate
    window every query reads at, and the heavy queries' budget. Reads `small.hpas` (how many Pods
    there are); adds `scrape`, `resolution`, `settings`, `heavy` and `interval`."""
    asked, window = plan.asked, plan.window
    # The scrape interval and the live series size the big passes (and the rate window every CPU
    # query uses): one small query (its interval over a share of the Pods, when kube-state-metrics
    # says there are many).
    scrape = read_scrape(plan.prom, asked.namespaces, end=plan.end, pods=_pods_reported(plan.small.hpas),
                         start=plan.end - window)
    resolution = choose(step=asked.step, rate_window=asked.rate_window, interval=scrape.interval(),
                        recorded=asked.cpu_rate_metric is not None)
    settings = dataclasses.replace(asked, step=queries.promql_duration(resolution.step),
                                   rate_window=queries.promql_duration(resolution.rate_window))
    for raised in resolution.notes:
        plan.notes.append(raised)
        plan.progress(f"  warning: {raised}")
    plan.progress(f"  reading at a {resolution.describe()}")
    # The heavy queries (the passes, the start-ups, the top fetch) of a small fleet hold a share of
    # its points (`fleet_budget`); the summaries and the totals keep the whole budget.
    fleet = points(scrape.total(), span=window, step=resolution.step, interval=scrape.interval())
    largest = points(max((n for by_name in scrape.live.values() for n in by_name.values()), default=0.0),
                     span=window, step=resolution.step, interval=scrape.interval())
    budget = fleet_budget(fleet, ceiling=settings.max_samples, largest=largest)
    if plan.working is not None:
        plan.working.resolve(f"{settings.step}/{settings.rate_window}")
    plan.scrape, plan.resolution, plan.settings = scrape, resolution, settings
    plan.heavy = dataclasses.replace(settings, max_samples=budget)
    plan.interval = scrape.interval() or float(resolution.step)


def ask_totals(plan: BuildPlan, pool: Executor) -> None:
    """Asks the workloads' total usage peaks in the background. Reads `settings`, `scrape` and
    `small.hpas` (what HPAs scale); adds `totals`."""
    settings, resolution = plan.settings, plan.resolution
    plan.totals = pool.submit(
        fetch_totals, plan.prom, namespaces=settings.namespaces, window=plan.window, step=resolution.step,
        rate_window=resolution.rate_window, end=plan.end, recorded=settings.cpu_rate_metric,
        progress=plan.progress, live=plan.scrape.total(), pieces=lambda n: totals_pieces(settings, n),
        scope=_hpa_scope(plan.small.hpas), checkpoint=plan.working,
    )


def read_passes(plan: BuildPlan, pool: Executor) -> None:
    """Reads the big passes, newest slice first; the start-ups are asked in the background as soon as
    the slices of the look-back are in. Reads `heavy` and `scrape`; adds `passes`, `records` and
    `startups_asked`."""
    heavy, end, lookback, resolution = plan.heavy, plan.end, plan.lookback, plan.resolution
    plan.passes = plan_passes(plan.prom, heavy, scrape=plan.scrape, end=end, progress=plan.progress,
                              checkpoint=plan.working, meter=plan.meter)
    reach = resolution.startup_reach(plan.asked.strategy.startup_window_seconds)
    asked: list[Future[StartupReads]] = []
    plan.records = plan.passes.read(
        recent=end - lookback,
        on_recent=lambda recent: asked.append(
            pool.submit(read_startups, plan.prom, heavy, recent, since=end - lookback, end=end,
                        reach=reach, step=resolution.startup_step)
        ),
    )
    # `passes` always calls back: the oldest slice starts at the window's start, no later than the
    # look-back.
    (plan.startups_asked,) = asked
    if plan.working is not None:
        plan.working.prune(before=end - plan.window)


def complete_series(plan: BuildPlan, pool: Executor) -> None:
    """Each series' statistics from the passes' records, with what the records lack read (when series
    without a start time were seen; short series whole, unless the statistic is counted exactly),
    grouped by workload and container. Reads `records` and `small.owners`; adds `owners`,
    `intervals`, `stats` and `histories`."""
    settings, end = plan.settings, plan.end
    owners = plan.small.owners.result()
    plan.progress(f"  owners: {len(owners.pods)} pods known to kube-state-metrics")
    seen = seen_without_start(plan.prom, settings, plan.records, end=end)
    intervals = {namespace: seconds for namespace, seconds in plan.scrape.intervals().items() if seconds > 0}
    stats = StatsBySeries(plan.records, interval=intervals or plan.interval, seen=seen,
                          since=end - plan.window, grid=settings.cpu_grid())
    if not settings.exact_cpu:
        # Exact: the top fetch reads every series' points above its pool's floor, short ones too,
        # so their every value (a range of every step per series: Prometheus' heap) is not needed.
        fetch_short_series(plan.prom, plan.heavy, stats, end=end, pool=pool)
    histories: dict[Container, list[SeriesId]] = defaultdict(list)
    for sid in stats:
        histories[(owners.workload(sid[0], sid[1]), sid[2])].append(sid)
    plan.owners, plan.intervals, plan.stats, plan.histories = owners, intervals, stats, histories


def read_kube_state(plan: BuildPlan) -> None:
    """The OOM kills and current requests of each series. Reads `small`; adds `oom` and `requests`."""
    plan.oom = {}
    for sample in plan.small.oom.result():
        sid = series_id(sample.labels)
        if sid is not None:
            plan.oom[sid] = 1
    plan.requests = defaultdict(dict)
    for sample in plan.small.requests.result():
        sid, resource = series_id(sample.labels), sample.labels.get("resource")
        if sid is not None and resource in {"cpu", "memory"}:
            plan.requests[sid][resource] = Decimal(repr(sample.value))


def collect_startups(plan: BuildPlan) -> None:
    """The start-ups read, and how many of the look-back's starts that is (said: never a silent 0 or a
    silent few). Reads `startups_asked`; adds `startups`."""
    runs, started_recently = plan.startups_asked.result()
    read = sum(len(v) for v in runs.values())
    plan.progress(f"  start-up: {read} of {started_recently} container starts in the last "
                  f"{queries.promql_duration(int(plan.lookback))} read")
    unseen = plan.resolution.startup_unseen(plan.asked.strategy.startup_window_seconds)
    if unseen is not None and read < started_recently:
        plan.notes.append(unseen)
        plan.progress(f"  warning: {unseen}")
    plan.startups = runs


def count_exact_cpu(plan: BuildPlan) -> None:
    """The CPU statistic of every container counted exactly (the top fetch), the build's own and each
    other one a policy names. Reads `stats`, `histories` and `heavy`; adds `exact`, `cpu_by` and
    `refused`."""
    prom, heavy, asked, strategy = plan.prom, plan.heavy, plan.asked, plan.settings.strategy
    plan.exact, plan.cpu_by = {}, defaultdict(dict)
    # One batch more than in flight (`Prometheus.bound`): its count, filter and reading follow each other.
    workers = max(1, plan.settings.concurrency) + 1
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="exact") as counting:
        finest = min(plan.intervals.values(), default=plan.interval)
        refused = prom.refusals
        if plan.settings.exact_cpu:
            plan.exact = exact_cpu(prom, heavy, plan.stats, plan.histories, end=plan.end, pool=counting,
                                   interval=finest, progress=plan.progress)
        own = CpuStatistic(strategy.cpu_percentile, strategy.cpu_aggregate, asked.rate_window)
        for statistic in sorted(set(plan.settings.statistics) - {own}):
            plan.progress(f"  CPU statistic {statistic.key} for the policies that name it")
            # Its rate window resolved as the build's (two intervals at least), read at the build's step.
            its = choose(step=asked.step, rate_window=statistic.rate_window, interval=plan.scrape.interval(),
                         recorded=asked.cpu_rate_metric is not None)
            counted = exact_cpu(prom, heavy, plan.stats, plan.histories, end=plan.end, pool=counting,
                                progress=plan.progress, interval=finest, statistic=dataclasses.replace(
                                    statistic, rate_window=queries.promql_duration(its.rate_window)))
            for pair, (value, _) in counted.items():
                plan.cpu_by[pair][statistic.key] = round_up(value, strategy.cpu_step, strategy.min_cpu)
        plan.refused = prom.refusals - refused


def ask_summaries(plan: BuildPlan, drawing: Executor) -> Future[Drawn] | None:
    """Asks the drawable summaries in the background, while the strategy runs (None: not asked).

    After the exact CPU fetch, not beside it: Prometheus' heap then holds one pass's queries at a time,
    in as long (both fill the queries in flight). Each summaries query selects every series of the
    fleet, whatever its piece: a small fleet's (`fleet_budget`) are asked one at a time, which halves
    Prometheus' heap for a second or two."""
    settings = plan.settings
    if settings.summary_days <= 0:
        return None
    return drawing.submit(
        summarize, plan.prom, namespaces=settings.namespaces, rate_window=plan.resolution.rate_window,
        recorded=settings.cpu_rate_metric, owners=plan.owners, end=plan.end, days=settings.summary_days,
        progress=plan.progress, checkpoint=plan.working, interval=plan.interval, series=plan.scrape.total(),
        budget=settings.max_samples, parallel=1 if plan.heavy.max_samples < settings.max_samples else 2,
    )


def recommend_containers(plan: BuildPlan) -> None:
    """Each container's recommendation from its history (the strategy), one container at a time, and
    what its newest series requests. Reads `histories`, `stats`, `oom`, `startups`, `exact`, `cpu_by`
    and `requests`; adds `containers` and `current`."""
    settings = plan.settings
    plan.containers, plan.current = defaultdict(dict), defaultdict(dict)
    for (key, container), sids in plan.histories.items():
        each = {sid: plan.stats[sid] for sid in sids}  # made here, dropped after: one container at a time
        history = ContainerHistory(
            series=[s for parts in each.values() for s in parts],
            oom_kills=sum(plan.oom.get(sid, 0) for sid in sids),
            startups=[run for sid in sids for run in plan.startups.get(sid, [])],
            cpu_exact=plan.exact.get((key, container)),
            resolution=(settings.step, settings.rate_window),
        )
        profile = recommend(history, settings=settings.strategy, window=settings.window)
        if isinstance(profile, Recommendation) and plan.cpu_by.get((key, container)):
            profile = dataclasses.replace(profile, cpu_by=plan.cpu_by[(key, container)])
        plan.containers[key][container] = profile
        latest = max(sids, key=lambda sid: max(s.last for s in each[sid]))
        if plan.requests.get(latest):
            plan.current[key][container] = plan.requests[latest]


def assemble_document(plan: BuildPlan, drawn_asked: Future[Drawn] | None) -> ProfileDocument:
    """The document: the recommendations with their totals and summaries, the namespaces the passes
    could not read left out (raises PrometheusError when that is every one). Reads `containers`,
    `current`, `totals` and `passes`; adds `unread`."""
    attach_totals(plan.containers, plan.totals.result(), owners=plan.owners, series=plan.stats)
    drawn = drawn_asked.result() if drawn_asked is not None else {}
    plan.unread = unread = plan.passes.unread_namespaces()
    workloads = {
        key: WorkloadEntry(
            dict(profiles), dict(plan.current.get(key, {})),
            {name: summary for name, summary in drawn.get(key, {}).items() if name in profiles},
        )
        for key, profiles in plan.containers.items()
        if key.namespace not in unread
    }
    stamp = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime(plan.end))
    partial = " (PARTIAL: Prometheus sent warnings)" if plan.prom.warnings else ""
    return ProfileDocument(
        workloads=workloads,
        generated_at=plan.end,
        source=f"prometheus {plan.prom.url}, {plan.settings.window} to {stamp}{partial}",
        window=plan.settings.window,
    )


def _pods_reported(asked: Future[list[Sample]]) -> float | None:
    """How many Pods kube-state-metrics reported in the last hour (`queries.hpa_targets`); None if unknown."""
    try:
        pods = [sample.value for sample in asked.result() if sample.labels.get("stat") == "pods"]
    except PrometheusError:
        return None
    return pods[0] if pods else None


def _hpa_scope(asked: Future[list[Sample]]) -> Scope:
    """Which workloads' totals to ask for (`totals.hpa_scope`); every one when Prometheus cannot say."""
    try:
        return hpa_scope(asked.result())
    except PrometheusError:
        return None
