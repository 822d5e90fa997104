"""The workload's total usage peak per container (summed over its Pods): what an HPA's headroom needs.

Per-Pod history says how big one Pod should be; whether an HPA can carry the workload at its busiest
(`webhook.core.sizing.headroom`) needs the whole: the peak of the usage of all its Pods added up at the same
moment. Prometheus adds the Pods up by a group label made from their names (one query, sliced like
the big passes when it is refused for loading too many samples); each group is then mapped to the
workload of its Pods through the build's own identity (`Owners.workload`), so the totals land on
exactly the keys the profiles use. A group whose Pods belong to several workloads is left out.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

from webhook.core.model.profile import ContainerProfile, Recommendation, UsageTotals
from webhook.core.model.workload import WorkloadKey
from webhook.profiles import queries
from webhook.profiles.budgets import MIN_SPAN, TOTALS_STEP
from webhook.profiles.checkpoint import Checkpoint
from webhook.profiles.identity import Owners
from webhook.profiles.prometheus import Prometheus, PrometheusError, Sample, TooManySamplesError
from webhook.profiles.slices import DAY, SeriesId, aligned_cut
from webhook.profiles.strategy import round_up

__all__ = ["Peaks", "Scope", "attach_totals", "fetch_totals", "group_of", "hpa_scope", "scope_pattern"]

_POD_GROUP = re.compile(queries.POD_GROUP)
Peaks = dict[tuple[str, str, str], dict[str, float]]  # (namespace, group, container) -> stat -> peak


def group_of(pod: str) -> str:
    """The group Prometheus sums a Pod into (`queries.usage_totals`, which anchors the same regex)."""
    match = _POD_GROUP.fullmatch(pod)
    return match[1] if match else ""


RESOURCES = ("cpu", "memory")
# The workloads whose totals are worth asking for: None for every one (which HPAs exist is unknown),
# else per resource the (namespace, name) pairs HPAs scale on it, maybe none.
Scope = Mapping[str, frozenset[tuple[str, str]]] | None


def hpa_scope(samples: Iterable[Sample]) -> Scope:
    """From `queries.hpa_targets`: what the window's HPAs scale, on which resource; None when that
    cannot be known.

    Known when kube-state-metrics names the targets, or reports Pods but no HPA at all (then nothing
    is scaled). An HPA is counted on the resources its metrics name (`cpu`, `memory`; none when it
    scales on other metrics only), and on both when kube-state-metrics lists none of its metrics. An
    HPA without its target (kube-state-metrics before `..._info`) or no kube-state-metrics at all
    leaves it unknown.
    """
    targets: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)  # (ns, hpa) -> its targets
    metrics: dict[tuple[str, str], set[str]] = defaultdict(set)  # (ns, hpa) -> the metrics it scales on
    hpas = pods = 0.0
    for sample in samples:
        labels = sample.labels
        stat = labels.get("stat")
        hpa = (labels.get("namespace", ""), labels.get("horizontalpodautoscaler", ""))
        if stat == "target":
            name = labels.get("scaletargetref_name", "")
            if hpa[0] and name:
                targets[hpa].add((hpa[0], name))
        elif stat == "metric":
            metrics[hpa].add(labels.get("metric_name", ""))
        elif stat == "hpas":
            hpas = sample.value
        elif stat == "pods":
            pods = sample.value
    if not targets and not (pods and not hpas):
        return None
    scope: dict[str, set[tuple[str, str]]] = {resource: set() for resource in RESOURCES}
    for hpa, scaled in targets.items():
        named = metrics.get(hpa)  # an HPA's name unknown (an old query's answer): no metrics known
        for resource in RESOURCES:
            if not named or resource in named:
                scope[resource] |= scaled
    return {resource: frozenset(scaled) for resource, scaled in scope.items()}


def scope_pattern(scope: frozenset[tuple[str, str]]) -> str:
    """The Pods of the scaled workloads by name (`<name>-...`, whatever the controller); a Pod of
    another workload whose name starts the same way is summed into its own group, which costs a little
    and changes nothing (`attach_totals` maps groups to workloads)."""
    names = sorted({name for _, name in scope})
    return "(?:" + "|".join(re.escape(name) for name in names) + ")-.+"


def fetch_totals(
    prom: Prometheus,
    *,
    namespaces: tuple[str, ...],
    window: int,
    step: int,
    rate_window: int,
    end: float,
    recorded: str | None = None,
    progress: Callable[[str], None] = lambda _: None,
    live: float = 0.0,
    pieces: Callable[[float], int] = lambda _: 1,
    scope: Scope = None,
    checkpoint: Checkpoint | None = None,
) -> Peaks:
    """The peak totals over the window, asked in `pieces(n)` queries for `n` live series (`live`
    without a scope, else as many as the scope's Pods have: one small count); empty (and said) if
    Prometheus cannot answer: they only add a warning at admission, so a build never fails for them.

    With a scope the queries are days (the peak of their peaks is the window's), then groups of its
    workloads (all the Pods of one workload are always summed in one query): both bound the series
    and the steps a query holds; without a scope, or with fewer workloads than queries, time slices.

    Only an HPA's headroom check reads them, so with a known `scope` only the Pods of the workloads
    HPAs scale on a resource are summed for it, and nothing is asked when no HPA scales anything.
    `live`: the series of one resource; `pieces` is given what all the resources asked add up to.

    With a `checkpoint` the slices are whole UTC days (and the two partial ones at the edges): the
    days it kept for this scope are not asked again, and the whole days asked are kept.
    """
    if scope is not None and not any(scope.values()):
        progress("  workload totals: no HPA scales on cpu or memory in these namespaces, none asked")
        return {}
    patterns: _Patterns = (
        dict.fromkeys(RESOURCES) if scope is None
        else {resource: scope_pattern(scaled) for resource, scaled in scope.items() if scaled}
    )
    asked = _series_asked(prom, namespaces, patterns, scope=scope, live=live, pieces=pieces, end=end)
    step = max(step, TOTALS_STEP)
    cut, groups = _cut(scope, patterns, parts=max(1, pieces(asked)), window=window, step=step, end=end,
                       aligned=checkpoint is not None)
    kind = "totals " + hashlib.sha256(repr(sorted(patterns.items())).encode()).hexdigest()[:16]
    by_slice = _kept_slices(cut, checkpoint=checkpoint, kind=kind)
    asking = [(group, lo, hi) for (lo, hi), peaks in by_slice.items() if not peaks for group in groups]
    reader = _Reader(prom, namespaces, step=step, rate_window=rate_window, recorded=recorded)
    try:
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="totals") as pool:
            list(pool.map(lambda part: reader.ask(part[0], part[1], part[2], by_slice[(part[1], part[2])]),
                          asking))
    except PrometheusError as exc:
        progress(f"  workload totals not read ({exc}); the HPA headroom check has no data this build")
        return {}
    peaks = _peaks(by_slice, checkpoint=checkpoint, kind=kind, end=end)
    scaled = (
        ", the Pods of the workloads HPAs scale (" + ", ".join(
            f"{len(scope.get(resource, ()))} on {resource}" for resource in RESOURCES) + ")"
        if scope is not None else ""
    )
    progress(f"  workload totals: {len(peaks)} group containers{scaled}")
    return peaks


def _series_asked(
    prom: Prometheus, namespaces: tuple[str, ...], patterns: Mapping[str, str | None], *, scope: Scope,
    live: float, pieces: Callable[[float], int], end: float,
) -> float:
    """The live series the totals' queries select: `live` per resource asked, or, when a scope's would
    be more than one query, as many as the scope's Pods have (one small count). Planned as if every
    Pod were asked, a scope's queries would be many small ones, each paying the selection and the
    subquery's set-up again."""
    asked = len(patterns) * live
    if scope is not None and pieces(asked) > 1:
        with contextlib.suppress(PrometheusError):
            counted = prom.instant(queries.live_series(namespaces, pod_patterns=patterns), at=end)
            asked = min(asked, sum(sample.value for sample in counted))
    return asked


_Bounds = tuple[float, float]
_Patterns = dict[str, str | None]  # per resource, the Pods whose usage is summed (None: every Pod)


def _cut(
    scope: Scope, patterns: _Patterns, *, parts: int, window: int, step: int, end: float, aligned: bool
) -> tuple[list[_Bounds], list[_Patterns]]:
    """The time slices and the workload groups the totals are asked in (a query for each of both), about
    `parts` queries in all: whole UTC days when `aligned` (what a checkpoint keeps), the groups making
    up the rest; else, with a scope, days first (a query over a day reads one or two of Prometheus'
    blocks, and the scope's pattern is run over the Pod names of each block a query reads), then
    groups; without a scope, time slices alone."""
    if aligned:
        cut = aligned_cut(end - window, end, unit=DAY, step=step)
        return cut, _groups(scope, -(-parts // len(cut))) if scope is not None else [patterns]
    days = max(1, min(parts, window // DAY)) if scope is not None else 1
    groups = _groups(scope, -(-parts // days)) if scope is not None else [patterns]
    sliced = max(1, min(-(-parts // len(groups)), window // MIN_SPAN))
    width = max(step, window // sliced // step * step)
    bounds = [end - window + i * width for i in range(sliced)] + [end]
    return [(lo, hi) for lo, hi in itertools.pairwise(bounds) if hi > lo], groups


def _kept_slices(cut: list[_Bounds], *, checkpoint: Checkpoint | None, kind: str) -> dict[_Bounds, Peaks]:
    """Every slice of `cut`, with the peaks the checkpoint kept for it (a whole UTC day), else none yet."""
    by_slice: dict[_Bounds, Peaks] = {}
    for lo, hi in cut:
        kept = checkpoint.take_day(kind, hi) if checkpoint is not None and hi - lo == DAY else None
        peaks = _from_rows(kept) if kept is not None else None
        by_slice[(lo, hi)] = peaks if peaks is not None else defaultdict(dict)
    return by_slice


class _Reader:
    """The totals' queries, each split in time while Prometheus refuses it for its size."""

    def __init__(
        self, prom: Prometheus, namespaces: tuple[str, ...], *, step: int, rate_window: int,
        recorded: str | None,
    ) -> None:
        self.prom, self.namespaces = prom, namespaces
        self.step, self.rate_window, self.recorded = step, rate_window, recorded
        self.lock = threading.Lock()  # pieces are asked two at a time (the client bounds the build's queries)

    def ask(self, patterns: Mapping[str, str | None], lo: float, hi: float, into: Peaks) -> None:
        """The peaks of the Pods `patterns` picks over (lo, hi] into `into`."""
        span = round(hi - lo)
        query = queries.usage_totals(
            self.namespaces, span=span, step=self.step, rate_window=self.rate_window, recorded=self.recorded,
            pod_patterns=patterns,
        )
        try:
            answer = self.prom.instant(query, at=hi)
        except TooManySamplesError:
            if span <= MIN_SPAN:
                raise
            middle = lo + (span // 2 // self.step) * self.step
            self.ask(patterns, lo, middle, into)
            self.ask(patterns, middle, hi, into)
            return
        with self.lock:
            _add(into, answer)


def _peaks(
    by_slice: Mapping[_Bounds, Peaks], *, checkpoint: Checkpoint | None, kind: str, end: float
) -> Peaks:
    """The window's peak of each group container, the highest of its slices' (the whole days kept)."""
    peaks: Peaks = defaultdict(dict)
    for (lo, hi), of_slice in by_slice.items():
        if checkpoint is not None and hi - lo == DAY:
            checkpoint.keep_day(kind, hi, _rows(of_slice), end=end)
        for key, stats in of_slice.items():
            for stat, value in stats.items():
                peaks[key][stat] = max(peaks[key].get(stat, 0.0), value)
    return dict(peaks)


def _add(into: Peaks, answer: Iterable[Sample]) -> None:
    """Each group container's peaks of one answer, the higher one kept."""
    for sample in answer:
        labels = sample.labels
        key = (labels.get("namespace", ""), labels.get(queries.GROUP_LABEL, ""), labels.get("container", ""))
        stat = labels.get("stat", "")
        if key[0] and key[2] and stat in RESOURCES:
            into[key][stat] = max(into[key].get(stat, 0.0), sample.value)


def _rows(peaks: Peaks) -> list[list[str | float | None]]:
    """A day's peaks as checkpoint rows: namespace, group, container, cpu, memory (None: not asked)."""
    return [[*key, stats.get("cpu"), stats.get("memory")] for key, stats in sorted(peaks.items())]


def _from_rows(rows: list[Any]) -> Peaks | None:
    """`_rows` read back; None when they are not what it wrote (a damaged checkpoint: asked again)."""
    out: Peaks = defaultdict(dict)
    try:
        for namespace, group, container, cpu, memory in rows:
            for stat, value in (("cpu", cpu), ("memory", memory)):
                if value is not None:
                    out[(str(namespace), str(group), str(container))][stat] = float(value)
    except (TypeError, ValueError):
        return None
    return out


def _groups(scope: Mapping[str, frozenset[tuple[str, str]]], parts: int) -> list[_Patterns]:
    """The scope's workloads in at most `parts` groups of about equal size, as the patterns of each
    group's Pods per resource (a resource only where some workload of the group is scaled on it)."""
    workloads = sorted(set().union(*scope.values()))
    count = max(1, min(parts, len(workloads)))
    groups = []
    for index in range(count):
        chunk = frozenset(workloads[index * len(workloads) // count : (index + 1) * len(workloads) // count])
        patterns: dict[str, str | None] = {
            resource: scope_pattern(chunk & scaled) for resource, scaled in scope.items() if chunk & scaled
        }
        if patterns:
            groups.append(patterns)
    return groups


def attach_totals(
    containers: MutableMapping[WorkloadKey, dict[str, ContainerProfile]],
    peaks: Peaks,
    *,
    owners: Owners,
    series: Iterable[SeriesId],
) -> None:
    """Set `Recommendation.totals` from `peaks` for every container whose group maps to one workload."""
    workloads: dict[tuple[str, str], set[WorkloadKey]] = defaultdict(set)
    for namespace, pod, _ in series:
        workloads[(namespace, group_of(pod))].add(owners.workload(namespace, pod))
    by_container: dict[tuple[WorkloadKey, str], dict[str, float]] = defaultdict(dict)
    for (namespace, group, container), stats in peaks.items():
        keys = workloads.get((namespace, group), set())
        if len(keys) != 1:
            continue
        (key,) = keys
        for stat, value in stats.items():  # a CronJob's Jobs are separate groups: the busiest counts
            by_container[(key, container)][stat] = max(by_container[(key, container)].get(stat, 0.0), value)
    for key, profiles in containers.items():
        for name, profile in profiles.items():
            peak = by_container.get((key, name))
            if peak and isinstance(profile, Recommendation):
                totals = UsageTotals(
                    cpu=round_up(peak["cpu"], Decimal("0.001"), Decimal(0)) if "cpu" in peak else None,
                    memory=round_up(peak["memory"], Decimal(1), Decimal(0)) if "memory" in peak else None,
                )
                profiles[name] = dataclasses.replace(profile, totals=totals)
