"""What a build keeps between runs: the reduced answers of the time slices that are over.

A 14-day build at 1-minute resolution makes Prometheus decode some 1.5 G samples, minutes of CPU,
to learn what the previous build already knew about the first 13 days. Like VPA's checkpoints, the
records of every whole slice of the aligned grid (`slices.aligned_cut`) that ended a while ago are
kept in one local file, and the next build asks Prometheus only for the partial slices at the two
edges of its window. It is a cache: a missing, unreadable or foreign file means a full build, never
a wrong one, and the key below changes whenever what the records mean changes.

The other reads of a build that a day's answer settles are kept the same way, per whole UTC day and
by kind (`take_day`, `keep_day`): the workload totals' daily peaks (the window's peak is the peak of
its days) and the summaries' hourly points: without them, a build an hour later would spend most
of its time reading the whole window of totals and the days of hourly usage again.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from webhook.profiles.slices import DAY, SeriesId, SliceRecords

__all__ = ["SETTLE", "Checkpoint", "checkpoint_key", "default_checkpoint_path", "load", "save"]

_VERSION = 5
_ENV = "POD_TAILOR_CHECKPOINT"
SETTLE = 3600  # a slice is kept once it ended this long before the build's end: late samples land first
_Bounds = tuple[float, float]


@dataclass
class Checkpoint:
    """Records per whole grid slice, for the builds that share `key`."""

    key: str
    slices: dict[_Bounds, SliceRecords] = field(default_factory=dict)
    note: str = ""  # why it is empty, when it was meant to be read
    reused: int = 0  # slices this build took from it (for the report)
    unit: int = 0  # the grid's slice width the kept slices were cut on (0: none yet)
    # Per kind of read: the end of a whole UTC day -> that day's rows (JSON values).
    days: dict[str, dict[float, list[Any]]] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)  # the kinds this build read or kept
    # The step and rate window the records were read at ("1m/2m"): with `auto` settings they follow
    # the data's interval, which the key cannot know before the build measures it.
    resolution: str = ""

    def resolve(self, resolution: str) -> None:
        """Forget every record read at another resolution than the build's (`resolution`)."""
        if self.resolution and self.resolution != resolution:
            self.slices, self.days, self.unit = {}, {}, 0
            self.note = f"kept at {self.resolution}, the build reads at {resolution}: not used"
        self.resolution = resolution

    def grid_unit(self, needed: int) -> int:
        """The slice width to cut on: the kept one while it is no wider than `needed`.

        The width a build needs moves with the live series (churn), and changing it would miss
        every kept slice; a finer grid than needed only costs a few more, smaller, queries.
        """
        if not self.unit or self.unit > needed:
            self.slices = {}  # cut on another grid: none of them can be asked for again
            self.unit = needed
        return self.unit

    def copy(self) -> Checkpoint:
        """Another checkpoint over the same slices (the records are shared: they never change)."""
        return Checkpoint(self.key, dict(self.slices), note=self.note, unit=self.unit,
                          days={kind: dict(kept) for kind, kept in self.days.items()},
                          resolution=self.resolution)

    def take_day(self, kind: str, day_end: float) -> list[Any] | None:
        """The rows kept of `kind` for the UTC day that ends at `day_end`, if any."""
        self.used.add(kind)
        return self.days.get(kind, {}).get(day_end)

    def keep_day(self, kind: str, day_end: float, rows: list[Any], *, end: float) -> None:
        """Keep `rows` if `day_end` ends a whole UTC day `SETTLE` before the build's `end`."""
        self.used.add(kind)
        if day_end % DAY == 0 and day_end <= end - SETTLE:
            self.days.setdefault(kind, {})[day_end] = rows

    def take(self, bounds: _Bounds) -> SliceRecords | None:
        records = self.slices.get(bounds)
        if records is not None:
            self.reused += 1
        return records

    def keep(self, bounds: _Bounds, records: SliceRecords, *, unit: int, end: float) -> None:
        """Keep `records` if `bounds` is a whole slice of the grid that ended `SETTLE` before `end`."""
        lo, hi = bounds
        if lo % unit == 0 and hi - lo == unit and hi <= end - SETTLE:
            self.slices[bounds] = records

    def prune(self, *, before: float) -> None:
        """Forget the slices that ended before `before` (out of every window still asked)."""
        self.slices = {bounds: records for bounds, records in self.slices.items() if bounds[1] > before}

    def settle(self, other: Checkpoint, *, before: float) -> None:
        """Take `other`'s slices and days (a build's working copy, its reads over): the days that
        ended before `before` dropped, and the kinds it did not use (a changed HPA scope is another
        kind of totals: the old one would only grow the file)."""
        self.slices, self.unit, self.resolution = other.slices, other.unit, other.resolution
        self.days = {kind: {day: rows for day, rows in kept.items() if day > before}
                     for kind, kept in other.days.items() if kind in other.used}


def checkpoint_key(url: str, *, namespaces: Sequence[str], resolution: Sequence[str],
                   cpu_metric: str, quantiles: Sequence[float]) -> str:
    """Everything a record depends on; a checkpoint written under another key is not read."""
    scope = ",".join(sorted(namespaces)) or "*"
    grid = ",".join(f"{q:g}" for q in quantiles)
    return f"v{_VERSION} {url.rstrip('/')} ns={scope} res={'/'.join(resolution)} cpu={cpu_metric} q={grid}"


def default_checkpoint_path(namespaces: Sequence[str] = ()) -> Path:
    """`$POD_TAILOR_CHECKPOINT`, else `$XDG_CACHE_HOME/pod-tailor/build-checkpoint.json` (~/.cache).

    A build of some `namespaces` keeps its own file beside it (`build-checkpoint.shop.json`), so that it
    never replaces the checkpoint of the builds of all namespaces (whose next build would be a full one).
    """
    explicit = os.environ.get(_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")) / "pod-tailor"
    if not namespaces:
        return base / "build-checkpoint.json"
    scope = "+".join(sorted(set(namespaces)))
    if len(scope) > 100:
        scope = hashlib.sha256(scope.encode()).hexdigest()[:16]
    return base / f"build-checkpoint.{scope}.json"


def load(path: Path, *, key: str) -> Checkpoint:
    """The checkpoint at `path` if it was written for `key`; otherwise an empty one saying why.

    JSON lines, a header and then one line per slice (its records column by column) or kept day, read
    one line at a time: a 14-day build of a large cluster keeps some 400,000 records, and parsing them
    all at once would double the memory. A missing value (NaN) is written as null and read back as NaN.
    """
    try:
        lines = path.open("rb")
    except FileNotFoundError:
        return Checkpoint(key, note="no checkpoint yet")
    except OSError as exc:
        return Checkpoint(key, note=f"checkpoint {path} unreadable ({exc}): not used")
    interned: dict[SeriesId, SeriesId] = {}
    slices: dict[_Bounds, SliceRecords] = {}
    with lines:
        try:
            header = orjson.loads(lines.readline())
            if not isinstance(header, dict) or header.get("key") != key:
                return Checkpoint(key, note=f"checkpoint {path} is for other settings: not used")
            unit = int(header.get("unit") or 0)
            resolution = str(header.get("resolution") or "")
            days: dict[str, dict[float, list[Any]]] = {}
            for line in lines:
                item = orjson.loads(line)
                if isinstance(item, dict):  # a day of another read
                    days.setdefault(str(item["kind"]), {})[float(item["day"])] = list(item["rows"])
                    continue
                lo, hi, columns = item
                slices[(float(lo), float(hi))] = SliceRecords.from_columns(columns, interned=interned)
        except (OSError, orjson.JSONDecodeError) as exc:
            return Checkpoint(key, note=f"checkpoint {path} unreadable ({exc}): not used")
        except (IndexError, KeyError, TypeError, ValueError) as exc:
            return Checkpoint(key, note=f"checkpoint {path} malformed ({exc}): not used")
    return Checkpoint(key, slices, unit=unit, days=days, resolution=resolution)


def save(checkpoint: Checkpoint, path: Path) -> None:
    """Write atomically (a temp file renamed over it), so a crash leaves the old one or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            header = {"version": _VERSION, "key": checkpoint.key, "unit": checkpoint.unit,
                      "resolution": checkpoint.resolution}
            out.write(orjson.dumps(header) + b"\n")
            for (lo, hi), records in sorted(checkpoint.slices.items()):
                out.write(orjson.dumps([lo, hi, records.columns()]) + b"\n")
            for kind, kept in sorted(checkpoint.days.items()):
                for day, day_rows in sorted(kept.items()):
                    out.write(orjson.dumps({"kind": kind, "day": day, "rows": day_rows}) + b"\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
