"""A thin, synchronous adapter over the Prometheus HTTP API (`/api/v1/query`, `/api/v1/query_range`).

Errors come back as `PrometheusError` with the URL and Prometheus' own `errorType: error`; a request
that Prometheus answers with `warnings` (partial data, e.g. a failing remote-read or a dropped shard)
is kept and reported by the caller rather than silently treated as complete.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from webhook.profiles.matrix import matrix
from webhook.profiles.queries import scoped

__all__ = [
    "OverloadedError", "Prometheus", "PrometheusError", "Sample", "Series", "TooManySamplesError", "Values",
    "joined",
]

_MAX_POINTS = 11_000  # Prometheus refuses range queries with more points per series than this


class PrometheusError(RuntimeError):
    """Prometheus could not be reached, refused the query, or answered with something unusable."""


class TooManySamplesError(PrometheusError):
    """The query would load more samples than `--query.max-samples`, ran out of `--query.timeout`, or
    hit a backend's own per-query limit (HTTP 422, as Prometheus, Thanos and Mimir answer them): the
    same question over fewer series or a shorter span may succeed, so callers split it and ask again."""


class OverloadedError(PrometheusError):
    """No answer in time, or HTTP 429/5xx: the server (or a proxy before it) is busy or failing.
    The big passes ask again after a pause, in smaller pieces; the small queries do not."""


_OVERLOADED = {429, 500, 502, 503, 504}


@dataclass(frozen=True, slots=True)
class Sample:
    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True, slots=True)
class Series:
    labels: Mapping[str, str]
    points: tuple[tuple[float, float], ...]  # (unix seconds, value)


Values = tuple[Mapping[str, str], Sequence[float]]  # one series of a range answer, its values only


@dataclass
class Prometheus:
    """One Prometheus server; counts queries and collects warnings for the build's report."""

    url: str
    timeout: float = 120.0
    client: httpx.Client | None = None
    queries: int = 0
    warnings: list[str] = field(default_factory=list)
    selector: str = ""  # label matchers added to every query (`cluster="prod-eu"`), see queries.scoped
    samples_read: int = 0  # samples the queries touched, as Prometheus counts them (`stats=all`)
    peak_samples: int = 0  # the most samples one query held at once (what --query.max-samples limits)
    refusals: int = 0  # queries refused for their size (too many samples, a timeout)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()  # builds run several queries at once
        self._in_flight: threading.BoundedSemaphore | None = None
        self.url = self.url.rstrip("/")
        if self.client is None:
            self.client = httpx.Client(timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)))

    def bound(self, queries: int) -> None:
        """At most `queries` requests in flight at once from every thread of this client (0: no bound):
        what a build costs Prometheus at a time is this many queries' samples, whatever the fleet."""
        self._in_flight = threading.BoundedSemaphore(queries) if queries > 0 else None

    def close(self) -> None:
        if self.client is not None:
            self.client.close()

    def _call(
        self, endpoint: str, params: Mapping[str, str | list[str]], *, listing: bool = False,
        values_only: bool = False,
    ) -> Any:
        """The answer's `data`; `values_only`: a matrix's result as (labels, values) pairs (`matrix`)."""
        assert self.client is not None
        with self._lock:
            self.queries += 1
        where = f"{self.url}{endpoint}"
        if self.selector and isinstance(query := params.get("query"), str):
            params = {**params, "query": scoped(query, self.selector)}
        series = endpoint == "/api/v1/series"
        if listing and not series:  # the label values endpoint: GET (it answers only that)
            request = functools.partial(self.client.get, where, params=params)
        elif series:  # POST: a selector per kind, each naming the scope's namespaces, fits no URL limit
            request = functools.partial(self.client.post, where, data=params)
        else:
            request = functools.partial(self.client.post, where, data={**params, "stats": "all"})
        try:
            if self._in_flight is None:
                response = request()
            else:
                with self._in_flight:
                    response = request()
        except httpx.TimeoutException:
            raise OverloadedError(f"Prometheus at {self.url}: no answer within {self.timeout:g}s") from None
        except httpx.HTTPError as exc:
            raise PrometheusError(f"cannot reach Prometheus at {self.url}: {exc}") from None
        read = matrix(response.content) if values_only else None
        try:
            body = orjson.loads(response.content) if read is None else read[0]  # faster and leaner than json
        except orjson.JSONDecodeError:
            error = OverloadedError if response.status_code in _OVERLOADED else PrometheusError
            raise error(
                f"Prometheus at {self.url}: HTTP {response.status_code}, not a Prometheus API answer: "
                f"{response.text[:200]!r}"
            ) from None
        if not isinstance(body, dict) or body.get("status") != "success":
            kind = body.get("errorType", "error") if isinstance(body, dict) else "error"
            message = body.get("error", "no error message") if isinstance(body, dict) else str(body)[:200]
            text = f"Prometheus at {self.url}: HTTP {response.status_code}, {kind}: {message}"
            if "too many samples" in str(message) or kind == "timeout" or response.status_code == 422:
                with self._lock:
                    self.refusals += 1
                raise TooManySamplesError(text)
            if response.status_code in _OVERLOADED:
                raise OverloadedError(text)
            raise PrometheusError(text)
        data = body.get("data")
        if series or not listing:
            # The label values' warnings (a remote-read backend that cannot list labels) leave no answer
            # partial; the series' (a store that did not answer) leave the owners partial, as a query's.
            with self._lock:
                self.warnings += [f"{endpoint}: {warning}" for warning in body.get("warnings") or ()]
        if listing and isinstance(data, list):
            return data
        if not isinstance(data, dict) or "result" not in data:
            raise PrometheusError(f"Prometheus at {self.url}: answer without data.result")
        self._count(data.get("stats"))
        if values_only:
            data["result"] = read[1] if read is not None else [
                (item["metric"], [float(v) for _, v in item["values"]]) for item in data["result"]]
        return data

    def _count(self, stats: Any) -> None:
        samples = stats.get("samples") if isinstance(stats, dict) else None
        if not isinstance(samples, dict):
            return
        touched, peak = samples.get("totalQueryableSamples"), samples.get("peakSamples")
        with self._lock:
            self.samples_read += touched if isinstance(touched, int) else 0
            self.peak_samples = max(self.peak_samples, peak if isinstance(peak, int) else 0)

    def label_values(self, label: str, *, match: str, start: float, end: float) -> list[str]:
        """The values `label` takes on the series `match` selects in [start, end]: an index lookup,
        no sample is read (what a build's plan lists the namespaces of its scope with)."""
        params = {"match[]": scoped(match, self.selector), "start": f"{start:.3f}", "end": f"{end:.3f}"}
        values = self._call(f"/api/v1/label/{label}/values", params, listing=True)
        return sorted(str(value) for value in values)

    def series(self, matches: Sequence[str], *, start: float, end: float) -> list[Mapping[str, str]]:
        """The label sets of the series `matches` select that have samples in [start, end]: an index
        lookup, no sample decoded (`max_over_time` over the window decodes every one of them)."""
        params: dict[str, str | list[str]] = {"match[]": [scoped(match, self.selector) for match in matches],
                  "start": f"{start:.3f}", "end": f"{end:.3f}"}
        label_sets = self._call("/api/v1/series", params, listing=True)
        if not isinstance(label_sets, list):
            raise PrometheusError(f"Prometheus at {self.url}: /api/v1/series answered no list")
        return [item for item in label_sets if isinstance(item, dict)]

    def instant(self, query: str, *, at: float) -> list[Sample]:
        """An instant query evaluated at `at`; NaN values (empty quantiles) are dropped."""
        return [Sample(labels, value) for labels, value in self.instant_values(query, at=at)]

    def instant_values(self, query: str, *, at: float) -> list[tuple[Mapping[str, str], float]]:
        """`instant` as (labels, value) pairs: for the big passes' answers of 100,000s of values, where
        making a `Sample` each (a frozen dataclass) would be most of what reading them costs."""
        data = self._call("/api/v1/query", {"query": query, "time": f"{at:.3f}"})
        if data.get("resultType") != "vector":
            kind = data.get("resultType")
            raise PrometheusError(f"Prometheus at {self.url}: expected a vector, got {kind}")
        out = []
        for item in data["result"]:
            value = float(item["value"][1])
            if value == value:  # not NaN
                out.append((item["metric"], value))
        return out

    def range(self, query: str, *, start: float, end: float, step: int) -> list[Series]:
        """A range query, cut into pieces of at most 11,000 points per series and merged by labels.

        A piece Prometheus refuses for loading too many samples (or a timeout) is halved and asked again.
        """
        series = joined(self.range_points(query, start=start, end=end, step=step))
        return [Series(dict(labels), tuple(sorted((float(t), float(v)) for t, v in points)))
                for labels, points in series]

    def range_points(
        self, query: str, *, start: float, end: float, step: int
    ) -> list[tuple[Mapping[str, str], Any]]:
        """`range` as Prometheus wrote it: (labels, [[time, "value"], ...]) per series and piece, not
        merged, sorted or turned into tuples (for an answer its reader walks once, point by point)."""
        pieces = self._ranged(query, start=start, end=end, step=step)
        return [(item["metric"], item["values"]) for item in pieces]

    def range_values(self, query: str, *, start: float, end: float, step: int) -> list[Values]:
        """`range` without timestamps or order: (labels, values) per series and piece, negative values
        as 0 (a counter's reset). For answers of millions of points, where only the values count."""
        out: list[Values] = []
        for labels, values in self._ranged(query, start=start, end=end, step=step, values_only=True):
            out.append((labels, values if min(values, default=0.0) >= 0 else [max(v, 0.0) for v in values]))
        return out

    def _ranged(
        self, query: str, *, start: float, end: float, step: int, values_only: bool = False
    ) -> Iterator[Any]:
        pending = list(_pieces(start, end, step))[::-1]
        while pending:
            lo, hi = pending.pop()
            try:
                data = self._call(
                    "/api/v1/query_range",
                    {"query": query, "start": f"{lo:.3f}", "end": f"{hi:.3f}", "step": str(step)},
                    values_only=values_only,
                )
            except TooManySamplesError:
                steps = int((hi - lo) // step)
                if steps < 2:
                    raise
                middle = lo + (steps // 2) * step
                pending += [(middle + step, hi), (lo, middle)]
                continue
            yield from data["result"]


def joined(answer: Sequence[tuple[Mapping[str, str], Any]]) -> list[tuple[Mapping[str, str], list[Any]]]:
    """`Prometheus.range_points`' pieces joined per series, in the order they came (time order: the
    pieces come in order), the points still as Prometheus wrote them."""
    merged: dict[tuple[tuple[str, str], ...], tuple[Mapping[str, str], list[Any]]] = {}
    for labels, points in answer:
        key = tuple(sorted(labels.items()))
        if key in merged:
            merged[key][1].extend(points)
        else:
            merged[key] = (labels, list(points))
    return list(merged.values())


def _pieces(start: float, end: float, step: int) -> Iterator[tuple[float, float]]:
    width = step * (_MAX_POINTS - 1)
    lo = start
    while lo <= end:
        hi = min(end, lo + width)
        yield lo, hi
        lo = hi + step
