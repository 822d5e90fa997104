"""Time slices of a build: how the window is cut, and what one slice's answers reduce to.

The big passes (CPU quantiles, memory peaks with counts and start times) are asked slice by slice.
Each slice's answers become one `SliceRecord` per container series, the only thing a build keeps of
them, stored column by column (`SliceRecords`): a large build holds a few hundred thousand, and a
checkpoint stores the same records for the slices that will not change, so the next build asks
Prometheus only for the rest.
"""

from __future__ import annotations

import itertools
import math
import sys
from array import array
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, overload

from webhook.profiles.strategy import SeriesStats

__all__ = [
    "DAY",
    "SeriesId",
    "SliceRecord",
    "SliceRecords",
    "StatsBySeries",
    "aligned_cut",
    "auto_slices",
    "by_series",
    "even_cut",
    "per_day",
    "records",
    "series_id",
    "shared_id",
    "without_start",
]

DAY = 86_400
SeriesId = tuple[str, str, str]  # namespace, pod, container
_DAY_DIVISORS = (1, 2, 3, 4, 6, 8, 12, 24)  # slices per day that keep boundaries on whole hours


class SliceRecord(NamedTuple):
    """One container series over one time slice, as Prometheus reduced it."""

    series: SeriesId
    lo: float
    hi: float
    samples: int
    start: float | None  # cadvisor's container start time, when the series has one
    memory_peak: float | None  # bytes
    cpu: tuple[float, ...]  # cores at each quantile of the build's grid (1.0 is the max); NaN: none
    latest: float | None = None  # the container's start as of the slice's end (differs after a restart)


class SliceRecords(Sequence[SliceRecord]):
    """Records stored column by column (arrays of floats): some 70 bytes a series and slice rather
    than 340 as tuples of Python floats. A 14-day build of a large cluster holds 400,000 of them.

    Reads give `SliceRecord` rows; None is stored as NaN, and a series without CPU answers as NaNs.
    """

    def __init__(self, width: int) -> None:
        self.width = width  # CPU values per record: the build's quantile grid
        self.series: list[SeriesId] = []
        self._numbers = {name: array("d") for name in _NUMBERS}
        self._cpu = array("d")

    def append(self, record: SliceRecord) -> None:
        cpu = record.cpu or (math.nan,) * self.width
        if len(cpu) != self.width:
            raise ValueError(f"{len(cpu)} CPU values for a grid of {self.width}")
        self.series.append(record.series)
        for name in _NUMBERS:
            value = getattr(record, name)
            self._numbers[name].append(math.nan if value is None else value)
        self._cpu.extend(cpu)

    def extend(self, other: Iterable[SliceRecord]) -> None:
        if isinstance(other, SliceRecords) and other.width == self.width:
            self.series += other.series
            for name in _NUMBERS:
                self._numbers[name].extend(other._numbers[name])
            self._cpu.extend(other._cpu)
            return
        for record in other:
            self.append(record)

    def __len__(self) -> int:
        return len(self.series)

    def columns(self) -> dict[str, Any]:
        """The records as plain lists, column by column (a checkpoint's line: a large build keeps
        400,000 records, and a `SliceRecord` and a list made for each would take seconds)."""
        return {"width": self.width, "series": self.series, "cpu": self._cpu.tolist(),
                **{name: column.tolist() for name, column in self._numbers.items()}}

    @classmethod
    def from_columns(cls, columns: Mapping[str, Any], *, interned: dict[SeriesId, SeriesId]) -> SliceRecords:
        """`columns` read back (None as NaN); raises ValueError, KeyError or TypeError if malformed."""
        out = cls(int(columns["width"]))
        out.series = [shared_id((str(ns), str(pod), str(container)), interned)
                      for ns, pod, container in columns["series"]]
        out._cpu = _floats(columns["cpu"])
        out._numbers = {name: _floats(columns[name]) for name in _NUMBERS}
        if any(len(column) != len(out.series) for column in out._numbers.values()) or (
            len(out._cpu) != len(out.series) * out.width
        ):
            raise ValueError("columns of different lengths")
        return out

    def column(self, name: str) -> array[float]:
        """One of `lo`, `hi`, `samples`, `start`, `memory_peak`, `latest` (NaN for None): for loops
        over every record that read a field or two, without building the rows."""
        return self._numbers[name]

    def cpu_of(self, row: int) -> array[float]:
        return self._cpu[row * self.width : (row + 1) * self.width]

    @overload
    def __getitem__(self, index: int) -> SliceRecord: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[SliceRecord]: ...
    def __getitem__(self, index: int | slice) -> SliceRecord | Sequence[SliceRecord]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = self._numbers
        lo, hi, samples = n["lo"][index], n["hi"][index], n["samples"][index]
        start, peak, latest = n["start"][index], n["memory_peak"][index], n["latest"][index]
        at = (index % len(self)) * self.width
        return SliceRecord(
            self.series[index], lo, hi, int(samples), None if math.isnan(start) else start,
            None if math.isnan(peak) else peak, tuple(self._cpu[at : at + self.width]),
            None if math.isnan(latest) else latest,
        )


_NUMBERS = ("lo", "hi", "samples", "start", "memory_peak", "latest")


def _floats(values: Iterable[float | None]) -> array[float]:
    return array("d", [math.nan if value is None else value for value in values])


def auto_slices(*, series: float, window: int, interval: float, samples_per_query: int) -> int:
    """Slices that keep one pass over `series` live series under `samples_per_query` samples.

    Churn replaces Pods rather than adding to them, so the live series times the samples each takes
    in the window is the pass' size. At most one slice per hour.
    """
    if series <= 0 or interval <= 0:
        return 1
    samples = series * window / interval
    return max(1, min(math.ceil(samples / samples_per_query), window // 3600 or 1))


def per_day(slices: int, *, window: int) -> int:
    """Slices per day on the aligned grid for at least `slices` in `window`: a divisor of 24 hours."""
    wanted = math.ceil(slices * DAY / window) if window else 1
    return next((n for n in _DAY_DIVISORS if n >= wanted), _DAY_DIVISORS[-1])


def even_cut(lo: float, hi: float, *, pieces: int, step: int) -> list[tuple[float, float]]:
    """[lo, hi] in `pieces` slices on the step grid, last slice first in the returned stack."""
    width = max(step, int((hi - lo) / max(1, pieces)) // step * step)
    bounds = [lo + i * width for i in range(max(1, pieces))] + [hi]
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def aligned_cut(lo: float, hi: float, *, unit: int, step: int) -> list[tuple[float, float]]:
    """[lo, hi] cut at the multiples of `unit` seconds since the epoch (UTC days and their divisors).

    The slices inside are the same from one build to the next, so their answers can be kept; only
    the two partial slices at the edges move with the window. An edge shorter than `step` joins its
    neighbour (a query over less than a second is refused). Last slice first, like `even_cut`.
    """
    first = math.floor(lo / unit) * unit + unit
    inner = [float(b) for b in range(first, math.ceil(hi), unit) if b - lo >= step and hi - b >= step]
    bounds = [float(lo), *inner, float(hi)]
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def series_id(labels: Mapping[str, str]) -> SeriesId | None:
    ns, pod, container = labels.get("namespace"), labels.get("pod"), labels.get("container")
    if not ns or not pod or not container:
        return None
    return ns, pod, container


By = dict[SeriesId, dict[str, float]]  # one answer reduced: each series' values by `stat` label


def by_series(
    samples: Iterable[tuple[Mapping[str, str], float]], *, interned: dict[SeriesId, SeriesId]
) -> By:
    """One answer as {series: {stat: value}}, sharing one id tuple (interned strings) per series.

    Done as each answer arrives, so its label dicts are dropped at once: a large slice answers
    some 100,000 series values, and two slices are in flight. `samples`: (labels, value) pairs
    (`Prometheus.instant_values`).
    """
    out: By = defaultdict(dict)
    for labels, value in samples:
        sid = series_id(labels)
        if sid is not None:
            out[shared_id(sid, interned)][labels.get("stat", "")] = value
    return out


def shared_id(sid: SeriesId, interned: dict[SeriesId, SeriesId]) -> SeriesId:
    """One id tuple (of interned strings) per series, however many slices and answers name it."""
    shared = interned.get(sid)
    if shared is None:
        shared = interned.setdefault(sid, tuple(sys.intern(part) for part in sid))  # type: ignore[arg-type]
    return shared


def records(bounds: tuple[float, float], memory: By, cpu: By, *, grid: Sequence[float]) -> SliceRecords:
    """One slice's two answers (memory `max`/`count`/`start`/`latest`, CPU `q<quantile>`) joined.

    A series without a sample count (no memory series) has no life to weigh its CPU by: dropped.
    """
    stats = [f"q{q:g}" for q in grid]
    lo, hi = bounds
    out = SliceRecords(len(grid))
    for sid, mem in memory.items():
        if "count" not in mem:
            continue
        its_cpu = cpu.get(sid)
        values = tuple(max(its_cpu.get(stat, math.nan), 0.0) for stat in stats) if its_cpu else ()
        out.append(SliceRecord(sid, lo, hi, int(mem["count"]), mem.get("start"), mem.get("max"), values,
                               mem.get("latest")))
    return out


class StatsBySeries(Mapping[SeriesId, list[SeriesStats]]):
    """Every series' records as the strategy's `SeriesStats`, made when asked rather than all held.

    A series' life in a slice starts at its container start (or the slice start) and lasts its
    sample count times the scrape `interval` (per namespace when a mapping; one fewer from its
    start: the first sample begins it),
    never before the window starts (`since`); `seen` (first/last from the coverage fallback) is
    used for series without a start time. A series fetched whole is set in place of its records.
    """

    def __init__(
        self,
        records: SliceRecords,
        *,
        interval: float | Mapping[str, float],
        seen: Mapping[SeriesId, tuple[float, float]],
        since: float,
        grid: Sequence[float],
    ) -> None:
        self._records_read = records
        self._records: dict[SeriesId, list[int]] = defaultdict(list)  # rows of `records`, not objects
        for row, sid in enumerate(records.series):
            self._records[sid].append(row)
        self._whole: dict[SeriesId, list[SeriesStats]] = {}
        self.interval, self.seen, self.since, self.grid = interval, seen, since, tuple(grid)

    def __getitem__(self, sid: SeriesId) -> list[SeriesStats]:
        whole = self._whole.get(sid)
        if whole is not None:
            return whole
        if sid not in self._records:
            raise KeyError(sid)
        return [self._stats(sid, row) for row in self._records[sid]]

    def __setitem__(self, sid: SeriesId, stats: list[SeriesStats]) -> None:
        self._whole[sid] = stats

    def __iter__(self) -> Iterator[SeriesId]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def samples(self, sid: SeriesId) -> int:
        counts = self._records_read.column("samples")
        return int(sum(counts[row] for row in self._records[sid]))

    def _stats(self, sid: SeriesId, row: int) -> SeriesStats:
        read = self._records_read
        interval = self.interval if isinstance(self.interval, float | int) else (
            self.interval.get(sid[0]) or max(self.interval.values(), default=60.0))
        lo, hi = read.column("lo")[row], read.column("hi")[row]
        count, start = int(read.column("samples")[row]), read.column("start")[row]
        peak = read.column("memory_peak")[row]
        if start < lo:  # (NaN, no start time, compares false)
            # Alive before: its previous sample came within an interval before `lo`, half on average,
            # and so begins this slice's life (which then spans `count` intervals, not one fewer).
            first = max(self.since, lo - interval / 2)
            last = min(hi, first + count * interval)
        elif not math.isnan(start):
            first = min(hi, start)
            last = min(hi, first + (count - 1) * interval)
        elif sid in self.seen:
            first, last = max(lo, self.seen[sid][0]), min(hi, self.seen[sid][1])
        else:  # nothing says when: the count alone, placed at the end of the slice
            first, last = max(lo, hi - (count - 1) * interval), hi
        cpu = zip(self.grid, read.cpu_of(row), strict=True)
        return SeriesStats(samples=count, first=first, last=max(first, last),
                           memory_peak=None if math.isnan(peak) else peak,
                           cpu_quantiles={q: v for q, v in cpu if not math.isnan(v)})


def without_start(records: SliceRecords) -> bool:
    """Whether some series has no container start time in any slice (then a coverage query places it)."""
    every, started = set(records.series), set()
    for sid, start in zip(records.series, records.column("start"), strict=True):
        if not math.isnan(start):
            started.add(sid)
    return len(started) < len(every)
