"""The two big passes of a build (CPU quantiles; memory peaks, counts and start times), slice by
slice in time and shard by shard in series, each query under the build's sample budget.

What Prometheus holds in memory for a query is about the samples it touches, so a build costs it at
most `concurrency` queries of at most `max_samples` each, whatever the fleet's size. The plan comes
from a cheap count (`webhook.profiles.shards.plan`); a query refused anyway (the backend's own limit,
HTTP 422, a timeout) is split again: namespaces, then Pod-name classes, then time. A server that is
busy or failing (429, 5xx, no answer) is asked again after a pause, in smaller pieces, a few times;
what still cannot be read is listed as unread (never recorded as "no data"), and the build keeps the
previous profiles of those namespaces.
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from webhook.profiles import queries
from webhook.profiles.budgets import MIN_SPAN, PASS_RETRIES, PASS_SPLITS, BuildSettings
from webhook.profiles.checkpoint import Checkpoint
from webhook.profiles.prometheus import OverloadedError, Prometheus, PrometheusError, TooManySamplesError
from webhook.profiles.shards import Shard, estimate, plan
from webhook.profiles.sizing import Live, Scrape
from webhook.profiles.slices import (
    DAY,
    By,
    SeriesId,
    SliceRecords,
    aligned_cut,
    auto_slices,
    by_series,
    even_cut,
    per_day,
)
from webhook.profiles.slices import records as joined

__all__ = ["Meter", "Passes", "Unread", "plan_passes"]

Bounds = tuple[float, float]
Meter = Callable[[int, int, int], None]  # units done, units planned, samples read so far


@dataclass(frozen=True, slots=True)
class Unread:
    """A piece of a pass that could not be read, and why."""

    shard: Shard
    bounds: Bounds
    reason: str


class Passes:
    """Reads the passes of one build; `unread` lists what failed after every split and retry."""

    def __init__(
        self,
        prom: Prometheus,
        *,
        settings: BuildSettings,
        end: float,
        shards: Sequence[Shard],
        namespaces: Callable[[], Sequence[str]],
        progress: Callable[[str], None],
        checkpoint: Checkpoint | None,
        meter: Meter | None = None,
    ) -> None:
        self.prom, self.settings, self.end, self.progress = prom, settings, end, progress
        self.window = queries.duration(settings.window)
        self.step = queries.duration(settings.step)
        self.rate = queries.duration(settings.rate_window)
        self.slices = max(1, settings.slices)
        self.shards = list(shards)
        self.namespaces = namespaces  # every namespace of the scope: to split a shard over all of them
        self.checkpoint, self.meter, self.backoff = checkpoint, meter, settings.retry_pause
        self.unread: list[Unread] = []
        self.refusals = 0
        self._ids: dict[SeriesId, SeriesId] = {}
        self._done = self._planned = 0

    def _reduced(self, query: str, at: float) -> By:
        return by_series(self.prom.instant_values(query, at=at), interned=self._ids)

    def _ask(self, bounds: Bounds, shard: Shard) -> SliceRecords:
        """One shard of one slice: its memory and its CPU answer, joined per series."""
        lo, hi = bounds
        span = round(hi - lo)
        ns = shard.namespaces or self.settings.namespaces
        grid = self.settings.cpu_grid()
        memory = queries.memory_stats(ns, span=span, latest=max(300, 2 * self.step), shard=shard)
        cpu = queries.cpu_stats(ns, span=span, step=self.step * self.settings.seed_every(),
                                rate_window=self.rate, quantiles=grid, recorded=self.settings.cpu_rate_metric,
                                shard=shard)
        return joined(bounds, self._reduced(memory, hi), self._reduced(cpu, hi), grid=grid)

    def _read(
        self, bounds: Bounds, shard: Shard, *, attempt: int = 0, splits: list[int] | None = None
    ) -> SliceRecords:
        """`_ask`, split and asked again while Prometheus refuses or fails; [] and `unread` at the end.

        `splits`: what is left of the planned piece's allowance, shared by all its pieces."""
        splits = [PASS_SPLITS] if splits is None else splits
        try:
            return self._ask(bounds, shard)
        except TooManySamplesError as exc:
            pieces, reason, pause = self._smaller(bounds, shard), str(exc), 0.0
            said = f"Prometheus refused {self._name(bounds, shard)} ({_short(reason)}): split-on-refusal"
        except OverloadedError as exc:
            reason, pause = str(exc), self.backoff * 2**attempt
            pieces = (self._smaller(bounds, shard) or [(bounds, shard)]) if attempt < PASS_RETRIES else []
            said = f"{self._name(bounds, shard)}: {_short(reason)}; after {pause:g}s"
        if pieces and splits[0] <= 0:
            pieces, reason = [], f"still refused after {PASS_SPLITS} splits: {reason}"
        if not pieces:
            self.unread.append(Unread(shard, bounds, reason))
            self.progress(f"  NOT READ: {self._name(bounds, shard)}: {_short(reason)}")
            return SliceRecords(len(self.settings.cpu_grid()))
        self.refusals += 1
        self.progress(f"  {said} asks it again in {len(pieces)} piece(s)")
        splits[0] -= 1
        time.sleep(pause)
        out = SliceRecords(len(self.settings.cpu_grid()))
        for piece_bounds, piece in pieces:
            out.extend(self._read(piece_bounds, piece, attempt=attempt + (pause > 0), splits=splits))
        return out

    def _smaller(self, bounds: Bounds, shard: Shard) -> list[tuple[Bounds, Shard]]:
        """The same question in two smaller ones: fewer series first (exactly the same answers per
        series), a shorter span last (its quantiles are merged, a close approximation); [] at the end."""
        if children := shard.split(self.namespaces()):
            return [(bounds, child) for child in children]
        lo, hi = bounds
        span = round(hi - lo)
        if span <= MIN_SPAN:
            return []
        middle = lo + (span // 2 // self.step) * self.step
        return [((lo, middle), shard), ((middle, hi), shard)]

    def _name(self, bounds: Bounds, shard: Shard) -> str:
        span = queries.promql_duration(round(bounds[1] - bounds[0]))
        return f"{span} of {shard.describe()}"

    def _tick(self) -> None:
        self._done += 1
        if self.meter is not None:
            self.meter(self._done, self._planned, self.prom.samples_read)

    def grid(self) -> tuple[int, list[Bounds]]:
        """The time slices, newest first, and the checkpoint's unit (0 without a checkpoint)."""
        lo, hi = self.end - self.window, self.end
        if self.checkpoint is not None:
            unit = self.checkpoint.grid_unit(DAY // per_day(self.slices, window=self.window))
            return unit, aligned_cut(lo, hi, unit=unit, step=self.step)[::-1]
        return 0, even_cut(lo, hi, pieces=self.slices, step=self.step)[::-1]

    def read(self, *, recent: float, on_recent: Callable[[SliceRecords], None]) -> SliceRecords:
        """Every slice of the window: from the checkpoint when it has it, else asked, shard by shard.

        Newest first: once the slices back to `recent` are in, `on_recent` gets their records (the
        start-up reads need no more), while the older slices are still being asked. At most
        `concurrency` pieces are asked at once, and answers are reduced as they arrive.
        """
        unit, grid = self.grid()
        kept = {b: held for b in grid if self.checkpoint and (held := self.checkpoint.take(b)) is not None}
        asked = [(b, shard) for b in grid if b not in kept for shard in self.shards]
        self._planned = len(asked)
        width = len(self.settings.cpu_grid())
        out = SliceRecords(width)
        recent_at: float | None = recent
        # One more worker than queries in flight (`Prometheus.bound`): while one reduces its answer,
        # Prometheus still has `concurrency` queries to work on.
        workers = max(1, self.settings.concurrency) + 1
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pass") as pool:
            pending = iter(asked)
            flight: deque[Future[SliceRecords]] = deque()

            def top_up() -> None:
                while len(flight) < workers and (unit_ := next(pending, None)) is not None:
                    flight.append(pool.submit(self._read, *unit_))

            top_up()
            for i, bounds in enumerate(grid):
                if bounds in kept:
                    out.extend(kept[bounds])
                else:
                    answered, failed = SliceRecords(width), len(self.unread)
                    for _ in self.shards:
                        answered.extend(flight.popleft().result())
                        top_up()
                        self._tick()
                    if self.checkpoint is not None and len(self.unread) == failed:
                        self.checkpoint.keep(bounds, answered, unit=unit, end=self.end)
                    out.extend(answered)
                    self.progress(f"  slice {i + 1}/{len(grid)}: {len(answered)} series"
                                  + (f" from {len(self.shards)} shards" if len(self.shards) > 1 else ""))
                if recent_at is not None and bounds[0] <= recent_at:
                    recent_copy = SliceRecords(width)  # `out` grows on while the reader runs
                    recent_copy.extend(out)
                    on_recent(recent_copy)
                    recent_at = None
        where = f", {len(kept)} from the checkpoint" if kept else ""
        self.progress(f"  {len(out)} series values from {len(grid)} slice(s){where}")
        return out


    def unread_namespaces(self) -> dict[str, str]:
        """Each namespace some piece could not read, with the first reason; raises PrometheusError when
        that is every namespace of the scope (the build read nothing it could write)."""
        out: dict[str, str] = {}
        for piece in self.unread:
            for namespace in piece.shard.namespaces or self.namespaces():
                out.setdefault(namespace, piece.reason)
        if out and set(out) >= set(self.namespaces()):
            first = next(iter(out.values()))
            raise PrometheusError(f"the big passes could not be read for any namespace of the scope: {first}")
        return out


def plan_passes(
    prom: Prometheus,
    settings: BuildSettings,
    *,
    scrape: Scrape,
    end: float,
    progress: Callable[[str], None],
    checkpoint: Checkpoint | None,
    meter: Meter | None,
) -> Passes:
    """The big passes' time slices and shards, from the live series of each namespace and container."""
    window, step = queries.duration(settings.window), queries.duration(settings.step)
    live, interval = scrape.live, scrape.interval()
    total = scrape.total()
    # A CPU subquery holds a point per step, the memory pass one per raw sample: the finer counts.
    slices = settings.slices or auto_slices(series=total, window=window,
                                            interval=min(step, interval) if interval > 0 else step,
                                            samples_per_query=settings.samples_per_query)
    span = window / slices
    resolution = {ns: min(step, every) if every > 0 else step for ns, every in scrape.intervals().items()}
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


def _short(reason: str) -> str:
    return reason if len(reason) <= 160 else reason[:157] + "..."
