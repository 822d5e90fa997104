"""The policy's `inPlace` section: whether running Pods are right-sized in place, how much and when.

Off by default: resizing running Pods is a second promise (the Pod keeps running, its class and its
restarts untouched) that a platform team turns on per policy. `minChange` keeps a Pod from being
resized for noise (a change must pass both the relative and the absolute threshold), `learningHours`
waits for enough history of the workload, `maxConcurrentPercent` caps how many of a workload's Pods
are resizing at once, and `windows` (cron-like, in a time zone) say when resizes may start: none
means any time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from webhook.core.policy.reader import PolicyError, Reader

__all__ = ["InPlacePolicy", "MinChange", "Window", "in_place_policy", "open_window"]

_DURATION = re.compile(r"^(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?$")


@dataclass(frozen=True, slots=True)
class MinChange:
    """A resize is worth asking only when it moves a value by more than both thresholds."""

    relative: Decimal = Decimal("0.15")  # of the current value
    cpu: Decimal = Decimal("0.025")  # cores
    memory: Decimal = Decimal(32 * 2**20)  # bytes

    def passed(self, resource: str, current: Decimal, wanted: Decimal) -> bool:
        absolute = self.cpu if resource == "cpu" else self.memory
        return abs(wanted - current) > max(current * self.relative, absolute)


@dataclass(frozen=True, slots=True)
class Window:
    """Resizes may start from each time `schedule` (cron: minute hour day month weekday) matches, for
    `minutes`, in `time_zone`."""

    schedule: str
    minutes: int
    time_zone: str = "UTC"

    def open_at(self, now: float) -> bool:
        zone = ZoneInfo(self.time_zone)
        moment = datetime.fromtimestamp(now, UTC).astimezone(zone)
        # The last start at or before now (a start at this very minute counts: +1 s).
        last: datetime = croniter(self.schedule, moment + timedelta(seconds=1)).get_prev(datetime)
        return moment - last < timedelta(minutes=self.minutes)

    def describe(self) -> str:
        return f"'{self.schedule}' for {self.minutes}m ({self.time_zone})"


@dataclass(frozen=True, slots=True)
class InPlacePolicy:
    enabled: bool = False
    min_change: MinChange = field(default_factory=MinChange)
    learning_hours: float = 24.0  # of the workload's history before its Pods are resized
    max_concurrent_percent: Decimal = Decimal(10)  # of a workload's Pods resizing at once (at least 1)
    windows: tuple[Window, ...] = ()  # empty: any time

    def concurrency(self, pods: int) -> int:
        """How many of a workload's `pods` may be resizing at once: max(1, percent of them)."""
        return max(1, int(pods * self.max_concurrent_percent / 100))


def open_window(policy: InPlacePolicy, now: float) -> tuple[bool, str]:
    """(may a resize start now, why not)."""
    if not policy.windows or any(window.open_at(now) for window in policy.windows):
        return True, ""
    shown = "; ".join(window.describe() for window in policy.windows)
    return False, f"outside the maintenance windows ({shown})"


def _window(reader: Reader) -> Window:
    reader.only("schedule", "duration", "timeZone")
    schedule = reader.data.get("schedule")
    if not isinstance(schedule, str) or len(schedule.split()) != 5 or not croniter.is_valid(schedule):
        raise PolicyError(
            f"{reader.path}.schedule: must be a cron schedule (minute hour day month weekday), "
            f"got {schedule!r}"
        )
    duration = reader.data.get("duration")
    match = _DURATION.match(duration) if isinstance(duration, str) else None
    minutes = int(match["h"] or 0) * 60 + int(match["m"] or 0) if match else 0
    if not 0 < minutes <= 7 * 24 * 60:
        raise PolicyError(
            f"{reader.path}.duration: must be a duration like 4h or 90m (up to 168h), got {duration!r}"
        )
    zone = reader.data.get("timeZone", "UTC")
    try:
        ZoneInfo(str(zone))
    except (ZoneInfoNotFoundError, ValueError):
        raise PolicyError(f"{reader.path}.timeZone: must be an IANA time zone, got {zone!r}") from None
    return Window(schedule, minutes, str(zone))


def in_place_policy(reader: Reader) -> InPlacePolicy:
    """`inPlace: {enabled, minChange: {relative, cpu, memory}, learningHours, maxConcurrentPercent,
    windows: [{schedule, duration, timeZone}]}`."""
    reader.only("enabled", "minChange", "learningHours", "maxConcurrentPercent", "windows")
    change = reader.child("minChange").only("relative", "cpu", "memory")
    windows = reader.data.get("windows") or []
    if not isinstance(windows, list):
        raise PolicyError(f"{reader.path}.windows: must be a list, got {type(windows).__name__}")

    return InPlacePolicy(
        enabled=reader.boolean("enabled"),
        min_change=MinChange(
            relative=change.number("relative", low=0, high=10),
            cpu=change.quantity("cpu"),
            memory=change.quantity("memory"),
        ),
        learning_hours=float(reader.number("learningHours", low=0, high=24 * 90)),
        max_concurrent_percent=reader.number("maxConcurrentPercent", low=1, high=100),
        windows=tuple(
            _window(Reader(raw, f"{reader.path}.windows[{index}]")) for index, raw in enumerate(windows)
        ),
    )
