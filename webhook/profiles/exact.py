"""Exact pooled CPU percentiles: counts of usage points over thresholds, refined until the answer is
bracketed within `TOLERANCE`.

The big CPU pass reduces each Pod's series to two quantiles (the target and the max) per time slice,
and the pooled percentile rebuilt from them (`strategy.mixture_quantile`) is close, not exact: when
Pods live through different hours or days, their distributions differ in shape and the rebuild
under-weights the busy ones (4-8 % low on the peer bench's history). So for every pool (a container
of a workload: every point of every Pod pooled; or one Pod, for `maxPerPod`) the build then asks
Prometheus how many usage points fall below a few thresholds around the rebuilt value: the pooled
CDF is known exactly there, so the percentile is bracketed between two thresholds whatever the
shapes. A bracket still wider than `TOLERANCE` gets thresholds inside it in another round; the
value is then interpolated inside the bracket, so it is within `TOLERANCE` of the exact percentile
(Prometheus' `quantile_over_time` definition: linear between closest ranks) by construction.

One round is one evaluation of the usage per point: the `K` counts of a series travel packed in one
number, `sum_over_time(B ^ bucket(v))` over the points at or above the first threshold, `bucket(v)`
the number of further thresholds at or below `v` (linear edges, so `floor`), decoded in base `B`
(more than the points of a series in one query, and `B^K` within a float's 53 exact bits); the
first round also counts every point (`count_over_time`). Each query holds one branch per pool (its
Pods named, its own thresholds) over one span of at most `B - 2` steps: Prometheus evaluates the
branches one after the other, so what it holds at once is one branch's points, under the budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field

from webhook.profiles import queries
from webhook.profiles.prometheus import Prometheus, Sample
from webhook.profiles.slices import SeriesId, series_id

__all__ = ["TOLERANCE", "Bracket", "Pool", "digits_for", "refine"]

TOLERANCE = 0.01  # the answer's largest relative distance from the exact percentile
_EXACT_BITS = 2**53  # a float64 holds every integer up to this
_ROUNDS = 8  # rounds of thresholds at most (each one evaluation of the pools still open)
# The first round's thresholds by default: 0.9 x TOLERANCE apart around the estimate (an estimate
# within 1.35 % is settled in one round).
_FIRST_SPREAD = 0.9 * TOLERANCE
# Outside every threshold so far: the next ones 3 % apart from the nearest. Never far below the
# percentile, because only the points above the first threshold go through the bucket arithmetic.
_SEARCH = 0.03


@dataclass
class Bracket:
    """What is known of one pool: exact counts of points below thresholds, and its size."""

    estimate: float  # the rebuilt value the thresholds start around
    spread: float = _FIRST_SPREAD  # the first round's thresholds, apart by this share of the estimate
    ceiling: float = math.inf  # no point above it, when known
    total: int = 0  # points in the pool (known after the first round)
    below: dict[float, int] = field(default_factory=dict)  # threshold -> points strictly below it

    def bounds(self, q: float) -> tuple[float, float]:
        """(lo, hi) such that the pool's exact q-quantile is in [lo, hi] (hi may be infinite)."""
        if self.total <= 0:
            return 0.0, self.ceiling
        rank = q * (self.total - 1)
        lo_rank, hi_rank = math.floor(rank), math.ceil(rank)
        lo, hi = 0.0, self.ceiling
        for edge, count in self.below.items():
            if count >= hi_rank + 1:  # the point at hi_rank is below the edge
                hi = min(hi, edge)
            elif count <= lo_rank:  # the point at lo_rank is at or above it
                lo = max(lo, edge)
        return lo, max(lo, hi)

    def settled(self, q: float) -> bool:
        lo, hi = self.bounds(q)
        return self.total > 0 and (hi - lo <= TOLERANCE * max(lo, 1e-9) or hi <= 1e-6)

    def value(self, q: float) -> float:
        """The q-quantile: interpolated between the bracket's edges by their exact counts."""
        lo, hi = self.bounds(q)
        if self.total <= 0 or hi <= lo:
            return lo
        if math.isinf(hi):
            return lo
        below_lo = max((c for e, c in self.below.items() if e <= lo), default=0)
        below_hi = min((c for e, c in self.below.items() if e >= hi), default=self.total)
        if below_hi <= below_lo:
            return (lo + hi) / 2
        rank = q * (self.total - 1)
        # The points between the edges spread evenly: the j-th (0-based) at lo + (j - below_lo + 0.5) x width.
        width = (hi - lo) / (below_hi - below_lo)
        return min(hi, max(lo, lo + (rank - below_lo + 0.5) * width))

    def thresholds(self, q: float, count: int) -> list[float]:
        """`count` evenly spaced thresholds for the next round (linear: one `floor` buckets them).

        First around the estimate, `spread` apart; then, in a bracket open above, upwards from its
        floor; else around the value the counts interpolate (a secant step: the points between two
        edges are spread smoothly enough that one more round usually settles it), never outside it.
        """
        lo, hi = self.bounds(q)
        if not self.below:
            centre = min(max(self.estimate, lo), hi) if self.estimate > 0 else 0.0
            if centre <= 0:
                return []
            step = self.spread * centre
            first = centre - step * (count - 1) / 2
            return [first + k * step for k in range(count) if first + k * step > 0]
        if math.isinf(hi):  # every threshold so far was below it: look further up, 3 % at a time
            base = max(lo, max(self.below), 1e-3)
            return [base * (1 + _SEARCH * (k + 1)) for k in range(count)]
        if lo <= 0:  # every threshold so far was above it: look further down
            edges = [hi * (1 - _SEARCH * (count - k)) for k in range(count)]
            return edges if edges[0] > 0 else [hi * (k + 1) / (count + 1) for k in range(count)]
        centre = self.value(q)
        step = min((hi - lo) / (count + 1), _FIRST_SPREAD * centre)
        first = max(lo + step / 2, min(centre - step * (count - 1) / 2, hi - step * count))
        edges = [first + k * step for k in range(count)]
        return [edge for edge in edges if lo < edge < hi] or [lo + (k + 1) * (hi - lo) / (count + 1)
                                                              for k in range(count)]


@dataclass(frozen=True, slots=True)
class Pool:
    """Usage points pooled for one statistic: these series (their Pods in one namespace, container)."""

    key: object
    series: tuple[SeriesId, ...]
    values: tuple[float, ...] = ()  # points known whole (short series fetched raw), counted here


def digits_for(points: int) -> tuple[int, int]:
    """(base, digits) to pack bucket counts of a series with at most `points` points in one float:
    one digit per threshold (the points from it up to the next)."""
    base = points + 2
    digits = 1
    while base ** (digits + 1) <= _EXACT_BITS:
        digits += 1
    return base, digits


def _branch(
    index: int, pool_series: Sequence[SeriesId], edges: Sequence[float], *, base: int, span: int, step: int,
    rate_window: int, recorded: str | None, size: bool,
) -> str:
    """One pool's packed counts at or above each edge over one span, tagged `branch="<index>"`; with
    `size`, also its points in all (`branch="<index>:n"`).

    The filter `>= first edge` comes first: only the points above it (the top few percent, near the
    percentile) go through the bucket arithmetic, which costs Prometheus several times the `rate()`
    itself per point (measured: 1.1 s for every point, 0.4 s past the filter, 0.2 s the rate alone).
    """
    namespace, _, container = pool_series[0]
    pods = sorted({sid[1] for sid in pool_series})
    usage = queries.cpu_usage((namespace,), rate_window=rate_window, recorded=recorded, pods=pods,
                              container=container)
    first, width = edges[0], (edges[1] - edges[0]) if len(edges) > 1 else edges[0]
    bucket = f"clamp_max(floor((({usage} >= {first!r}) - {first!r}) / {width!r}), {len(edges) - 1})"
    sub = f"[{queries.promql_duration(span)}:{queries.promql_duration(step)}]"
    out = f'label_replace(sum_over_time(({base} ^ {bucket}){sub}), "branch", "{index}", "", "")'
    if size:
        out += f' or label_replace(count_over_time({usage}{sub}), "branch", "{index}:n", "", "")'
    return out


def _spans(lo: float, hi: float, *, step: int, points: int) -> list[tuple[float, float]]:
    """[lo, hi] in spans of at most `points` steps, each ending on the step grid of `hi`."""
    width = max(step, points * step)
    out, end = [], hi
    while end - lo >= step:
        start = max(lo, end - width)
        out.append((start, end))
        end = start
    return out


def refine(
    prom: Prometheus,
    pools: Sequence[Pool],
    brackets: Mapping[object, Bracket],
    *,
    q: float,
    window: tuple[float, float],
    step: int,
    rate_window: int,
    recorded: str | None,
    budget: int,
    max_query_bytes: int,
    pool_executor: Executor,
    progress: Callable[[str], None],
    wanted: Callable[[Mapping[object, Bracket]], set[object]] | None = None,
) -> int:
    """Ask rounds of thresholds until every wanted pool's bracket is settled; returns the rounds.

    `wanted` picks the pools still worth refining (default: every unsettled one): for a maximum over
    Pods, only those that can still be the maximum.
    """
    lo, hi = window
    span_points = 1440
    base, count = digits_for(span_points)
    spans = _spans(lo, hi, step=step, points=span_points)
    by_key = {pool.key: pool for pool in pools}
    rounds = 0
    while rounds < _ROUNDS:
        open_keys = wanted(brackets) if wanted else {k for k, b in brackets.items() if not b.settled(q)}
        todo = [by_key[k] for k in open_keys if k in by_key]
        if not todo:
            break
        rounds += 1
        edges = {pool.key: brackets[pool.key].thresholds(q, count) for pool in todo}
        todo = [pool for pool in todo if edges[pool.key]]
        branches = _branches(todo, span_points=span_points, budget=budget)
        # Per pool: points at or above each threshold (digit d: from edge d up to the next), and in all.
        above: dict[object, list[int]] = {pool.key: [0] * count for pool in todo}
        sizes: dict[object, int] = {pool.key: len(pool.values) for pool in todo}
        for pool in todo:
            for value in pool.values:
                passed = _bucket(value, edges[pool.key])
                if passed:
                    above[pool.key][passed - 1] += 1
        texts = [
            (span, batch)
            for span in spans
            for batch in _batches(branches, edges, base=base, span=span, step=step, rate_window=rate_window,
                                  recorded=recorded, max_bytes=max_query_bytes, budget=budget,
                                  sizes={k for k, b in brackets.items() if b.total <= 0})
        ]
        futures = [pool_executor.submit(prom.instant, text, at=span[1]) for span, (text, _) in texts]
        for (_, (_, keys)), future in zip(texts, futures, strict=True):
            for sample in future.result():
                branch = sample.labels.get("branch", "")
                key = keys.get(branch.removesuffix(":n"))
                if key is None or not math.isfinite(sample.value):
                    continue
                if branch.endswith(":n"):
                    sizes[key] += round(sample.value)
                    continue
                packed = round(sample.value)
                for digit in range(count):
                    packed, above[key][digit] = packed // base, above[key][digit] + packed % base
        for pool in todo:
            bracket, counts = brackets[pool.key], above[pool.key]
            bracket.total = bracket.total or sizes[pool.key]
            for k, edge in enumerate(edges[pool.key]):
                bracket.below[edge] = bracket.total - sum(counts[k:])
        progress(f"  exact CPU: round {rounds}, {len(todo)} pool(s), {len(texts)} queries")
    return rounds


def _bucket(value: float, edges: Sequence[float]) -> int:
    return sum(1 for edge in edges if value >= edge)


def _branches(
    pools: Sequence[Pool], *, span_points: int, budget: int
) -> list[tuple[object, tuple[SeriesId, ...]]]:
    """(pool key, series) per branch: a pool's series in groups whose points fit the budget (the
    counts of a pool's branches add up)."""
    per_branch = max(1, budget // max(1, 2 * span_points))
    out: list[tuple[object, tuple[SeriesId, ...]]] = []
    for pool in pools:
        asked = sorted(set(pool.series))
        for start in range(0, len(asked), per_branch):
            out.append((pool.key, tuple(asked[start:start + per_branch])))
    return out


def _batches(
    branches: Sequence[tuple[object, tuple[SeriesId, ...]]], edges: Mapping[object, Sequence[float]], *,
    base: int, span: tuple[float, float], step: int, rate_window: int, recorded: str | None, max_bytes: int,
    sizes: set[object], budget: int,
) -> Iterable[tuple[str, dict[str, object]]]:
    """Queries of union'd branches, each under `max_bytes` of text and `budget` points (Prometheus
    counts a query's subquery points together until it ends); with the branch -> pool map."""
    width = round(span[1] - span[0])
    steps = max(1, width // step)
    parts: list[str] = []
    keys: dict[str, object] = {}
    size = points = 0
    for index, (key, series) in enumerate(branches):
        text = _branch(index, series, edges[key], base=base, span=width, step=step, rate_window=rate_window,
                       recorded=recorded, size=key in sizes)
        cost = len(series) * steps * (2 if key in sizes else 1)
        if parts and (size + len(text) + 6 > max_bytes or points + cost > budget):
            yield " or ".join(parts), keys
            parts, keys, size, points = [], {}, 0, 0
        parts.append(text)
        keys[str(index)] = key
        size += len(text) + 4
        points += cost
    if parts:
        yield " or ".join(parts), keys


def samples_by_branch(samples: Iterable[Sample]) -> dict[str, float]:
    """A round's answer as {branch: packed counts} (for tests)."""
    out: dict[str, float] = {}
    for sample in samples:
        if series_id(sample.labels) is not None:
            out[sample.labels.get("branch", "")] = sample.value
    return out
