"""The resolution a build reads at, and what a query at that resolution costs Prometheus.

A build's usage series are a `rate()` (or a recorded gauge) evaluated at `step`, over data scraped
every `interval` seconds. Three rules follow from what Prometheus holds for a query:

- **Windows that meet, neither overlapping nor leaving gaps.** `rate(x[W])` over data every `i`
  seconds measures the `W - i` seconds between the first and last sample of its window (a 2m window
  over 1-minute scrapes holds two samples: one interval). So the step is `auto` by default: `W - i`,
  at least a minute, where each window starts at the sample the previous one ended on and every
  sample interval is counted once (at 1-minute scrapes the 2m window at a 1m step). A step as long
  as the window would skip every other interval (a burst in the skipped ones never seen; KRR reads
  so); a finer one counts intervals twice for Prometheus' time and heap. A recorded rate is read at
  its own interval (each recorded point once). At 15 s scrapes the 30 s window stays at a 1-minute
  step: one interval in four, a regular sample of the same rates, for a quarter of the points.

- **Never a step finer than the data.** A subquery `[7d:1m]` over data scraped (or downsampled, as
  Thanos, Mimir and VictoriaMetrics keep older data at 5 m and 1 h) every 5 minutes materialises five
  points per raw sample, all of them copies: the same statistic for five times the heap. The step is
  raised to the coarsest interval measured (the newest hour and the window's oldest hour, where a
  long-term store keeps its downsampled data), and the rate window to at least two intervals.
- **Plan by the points a query materialises:** a subquery holds one point per step and series, a range
  selector one per raw sample and series: whichever is larger (`points`). A budget of raw samples
  alone would be off by the ratio of the interval to the step.
"""

from __future__ import annotations

from dataclasses import dataclass

from webhook.profiles import queries
from webhook.profiles.shards import estimate

__all__ = ["AUTO", "FLOOR", "Resolution", "choose", "points"]

AUTO = "auto"  # the rate window: two scrape intervals; the step: the window less one interval (>= `FLOOR`)
FLOOR = 60  # the finest step `auto` chooses (s): finer ones cost in proportion for a sample as good


@dataclass(frozen=True, slots=True)
class Resolution:
    """What a build reads at: its step and rate window (seconds), and the data's interval."""

    step: int
    rate_window: int
    interval: float  # the coarsest interval measured (s)
    notes: tuple[str, ...] = ()  # what was raised, and why
    # Start-up CPU's step: a minute or the data's interval, never coarser than `step`. A start-up's
    # peak lasts a minute or two, read at the data's own step (an explicit coarser `step` would cut
    # it); only a few minutes per start are read, so the finer step costs little.
    startup_step: int = FLOOR

    def startup_reach(self, window: int) -> int:
        """Seconds after a container start whose points are its start-up's. A point stands for the
        rate window before it, so it is the start-up's while that window reaches into the first
        `window` seconds: read no further than `window`, 5-minute data (samples 5 minutes apart, a
        rate needs two) has no point in a 5-minute start-up window at all."""
        return window + self.rate_window

    def startup_unseen(self, window: int) -> str | None:
        """Why a start-up window of `window` s can end before a start's first point, else None: the
        first sample comes up to an interval after the start, the first rate an interval later, on
        the start-up grid up to a step after that (points before `startup_reach` are read)."""
        if self.interval <= 0:
            return None
        data = nice_interval(self.interval)
        latest = 2 * data + self.startup_step  # a start's first point comes before this
        if latest <= self.startup_reach(window):
            return None
        return (f"the start-up window ({window}s) can end before a container's first CPU rate at data "
                f"every {data}s (two samples): start-ups are read only where the first samples came "
                f"early; --startup-window {latest - self.rate_window} or longer reads every start")

    def describe(self) -> str:
        return (f"step {queries.promql_duration(self.step)}, rate window "
                f"{queries.promql_duration(self.rate_window)} over data every {self.interval:g}s")


# Scrape intervals and downsampled resolutions people configure: a measured one within 10 % is one.
_COMMON = (1, 2, 5, 10, 15, 20, 30, 60, 120, 180, 300, 600, 900, 1800, 3600)


def nice_interval(interval: float) -> int:
    """A measured interval (samples per hour, counted over an inclusive hour: 3600/61 for 1-minute
    scrapes) as the configured one it stands for, else as whole seconds."""
    for common in _COMMON:
        if abs(interval / common - 1) <= 0.1:
            return common
    return max(1, round(interval))


def choose(*, step: str, rate_window: str, interval: float, recorded: bool) -> Resolution:
    """The step and rate window for data every `interval` seconds (0: unknown, kept as asked).

    `rate_window` is `auto` (two intervals, the shortest window in which `rate()` always has two
    samples) or a duration, raised to two intervals when shorter. A recorded rate needs no window.
    `step` is `auto` (the rate window less one interval, at least `FLOOR`: windows that meet at a
    sample; a recorded rate's own interval) or
    a duration, raised to the data's interval when finer.
    """
    notes: list[str] = []
    if interval > 0:
        data = nice_interval(interval)
        if rate_window == AUTO or recorded:
            rate = 2 * data
        else:
            rate, raised = queries.safe_rate_window(queries.duration(rate_window), interval=data)
            if raised:
                notes.append(raised)
    else:  # unknown: an explicit step is taken for the data's interval, else a minute
        data = FLOOR if step == AUTO else queries.duration(step)
        rate = max(2 * data, FLOOR) if rate_window == AUTO else queries.duration(rate_window)
    if step == AUTO:
        chosen = max(FLOOR, data if recorded else rate - data)
    else:
        chosen = queries.duration(step)
        if interval > 0 and chosen < data:
            asked = queries.promql_duration(chosen)
            notes.append(f"the step {asked} is finer than the data (every {data}s): "
                         f"raised to {queries.promql_duration(data)}, as finer steps only copy samples")
            chosen = data
    return Resolution(chosen, rate, interval, tuple(notes), startup_step=min(chosen, max(FLOOR, data)))


def points(series: float, *, span: float, step: float, interval: float) -> float:
    """Points one query over `series` series and `span` seconds materialises: a subquery's steps or
    a range selector's raw samples, whichever is more (`interval` 0: unknown, the step counts)."""
    return estimate(series, span=span, resolution=min(step, interval) if interval > 0 else step)
