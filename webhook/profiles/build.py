"""Prometheus -> strategy -> store: one profile build.

A build issues a fixed handful of queries for the whole scope (all namespaces, or the ones named):
owners, OOM kills, current requests, the scrape interval, then the two big passes (CPU quantiles,
memory peaks with counts and start times) slice by slice, then the usage of short-lived Pods and of
the containers that started recently. When Prometheus refuses a slice for loading too many samples,
it is halved and asked again, so a large cluster costs a few more queries, never one per Pod. With a
checkpoint, the whole past days it holds are not asked again (see `checkpoint`).

`build_profiles` runs the build's `phases` in order over one `phases.BuildPlan`.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from webhook.profiles import phases
from webhook.profiles.budgets import BuildSettings
from webhook.profiles.checkpoint import Checkpoint
from webhook.profiles.connection import PrometheusConnection
from webhook.profiles.passes import Meter
from webhook.profiles.phases import BuildPlan, Progress
from webhook.profiles.prometheus import Prometheus
from webhook.profiles.store import ProfileDocument

__all__ = ["BuildResult", "BuildSettings", "IncrementalBuild", "build_profiles"]


@dataclass(frozen=True, slots=True)
class BuildResult:
    document: ProfileDocument
    queries: int
    seconds: float
    warnings: tuple[str, ...]
    series: int
    reused_slices: int = 0  # slices taken from the checkpoint, not asked of Prometheus
    notes: tuple[str, ...] = ()  # settings the build had to change, what it cannot read (shown with -q)
    # Namespaces the big passes could not read entirely, with why: the document has none of their
    # workloads (the caller keeps the previous ones), never a "no data" for them.
    unread: tuple[tuple[str, str], ...] = ()
    samples_read: int = 0  # as Prometheus counted them
    peak_samples: int = 0  # the most samples one query held at once (what --query.max-samples limits)
    refusals: int = 0  # queries Prometheus refused that were split and asked again


def _noop(_: str) -> None:
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
    working = checkpoint.copy() if checkpoint is not None else None
    plan = BuildPlan(prom=prom, asked=settings, end=end, progress=progress, meter=meter, working=working,
                     started=started)
    # The summaries are asked once the passes and the exact CPU fetch are in, while the strategy runs
    # here (a few seconds of Python during which Prometheus would otherwise wait).
    drawing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="summaries")
    try:
        with ThreadPoolExecutor(max_workers=max(4, settings.concurrency)) as pool:
            phases.ask_small_reads(plan, pool)
            phases.choose_resolution(plan)
            phases.ask_totals(plan, pool)
            phases.read_passes(plan, pool)
            phases.complete_series(plan, pool)
            phases.read_kube_state(plan)
        phases.collect_startups(plan)
        phases.count_exact_cpu(plan)
        drawn = phases.ask_summaries(plan, drawing)
        phases.recommend_containers(plan)
        document = phases.assemble_document(plan, drawn)
        return _result(plan, document, checkpoint)
    finally:
        drawing.shutdown(wait=True, cancel_futures=True)


def _result(plan: BuildPlan, document: ProfileDocument, checkpoint: Checkpoint | None) -> BuildResult:
    """What the build found and cost; `checkpoint` takes the build's working copy when no answer warned."""
    prom = plan.prom
    plan.progress(
        f"built {len(document.workloads)} workloads, {len(plan.histories)} containers from "
        f"{len(plan.stats)} series in {time.monotonic() - plan.started:.1f}s with {prom.queries} queries"
    )
    if checkpoint is not None and plan.working is not None and not prom.warnings:
        checkpoint.settle(plan.working, before=plan.end - plan.window)
    return BuildResult(
        document=document,
        queries=prom.queries,
        seconds=time.monotonic() - plan.started,
        warnings=tuple(prom.warnings),
        series=len(plan.stats),
        reused_slices=plan.working.reused if plan.working is not None else 0,
        notes=tuple(plan.notes),
        unread=tuple(sorted(plan.unread.items())),
        samples_read=prom.samples_read,
        peak_samples=prom.peak_samples,
        refusals=plan.passes.refusals + plan.refused,
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
