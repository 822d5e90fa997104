"""Inline SVG charts for the html report and the dashboard: no script, no external asset, no library.

Colours come from CSS classes (see `page.STYLE`), so one chart reads in a light and a dark theme.
Each chart carries its scale as data attributes (`data-axis-max`, `data-plot-left`, `data-plot-width`
...) and each marked value its own (`data-value`), so a test can check that a request line sits where
its value says, as a person would by reading the axis.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape

from webhook.report.units import amount

__all__ = ["WIDTH", "Marker", "bars", "distribution", "hourly", "nice_max"]

WIDTH = 580  # two charts side by side in a 1280-pixel window


@dataclass(frozen=True, slots=True)
class Marker:
    """A value drawn as a line across the chart: today's or the recommended request or limit."""

    name: str  # css class: request-now, request-after, limit-now, limit-after, startup
    label: str
    value: float


def nice_max(value: float, *, binary: bool = False) -> float:
    """The axis end at or above `value` (never 0), so its ticks read well: 1, 2, 2.5 or 5 x 10^n for
    cores; for bytes a power of two of KiB, MiB, GiB... (4Gi: ticks 1Gi apart)."""
    if value <= 0 or math.isnan(value):
        return float(2**20) if binary else 1.0
    if binary:
        unit = 1024.0 ** max(0, math.floor(math.log(value, 1024)))
        return unit * 2.0 ** math.ceil(math.log2(value / unit) - 1e-9)
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if step * power >= value * 0.999999:
            return step * power
    return 10.0 * power


def _ticks(axis_max: float, *, binary: bool) -> list[float]:
    """Four or five steps that land on round numbers (2.5 and 5 cores in halves and ones)."""
    leading = axis_max / 10 ** math.floor(math.log10(axis_max)) if not binary else 1.0
    count = 5 if round(leading, 6) in (2.5, 5.0) else 4
    return [axis_max * i / count for i in range(count + 1)]


def _axis_max(resource: str, values: Sequence[float], *, headroom: float = 1.05) -> float:
    return nice_max(max(values, default=0.0) * headroom, binary=resource != "cpu")


def _svg(kind: str, title: str, height: float, attributes: Mapping[str, object], body: str) -> str:
    data = " ".join(f'data-{k}="{escape(str(v))}"' for k, v in attributes.items())
    return (
        f'<svg class="chart {kind}" role="img" aria-label="{escape(title)}" '
        f'viewBox="0 0 {WIDTH} {height:.0f}" width="{WIDTH}" height="{height:.0f}" {data} '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
        f'<text class="caption" x="4" y="13">{escape(title)}</text>{body}</svg>'
    )


def _text(css: str, x: float, y: float, text: str, *, anchor: str = "start") -> str:
    return f'<text class="{css}" x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}">{escape(text)}</text>'


def _x_axis(resource: str, axis_max: float, *, left: float, width: float, y: float, unit: str) -> str:
    parts = [f'<line class="axis" x1="{left}" y1="{y}" x2="{left + width}" y2="{y}"/>']
    for tick in _ticks(axis_max, binary=resource != "cpu"):
        x = left + width * tick / axis_max
        parts.append(f'<line class="grid" x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}"/>')
        parts.append(_text("tick", x, y + 16, amount(resource, tick), anchor="middle"))
    parts.append(_text("unit", left + width, y + 30, unit, anchor="end"))
    return "".join(parts)


def bars(resource: str, rows: Sequence[tuple[str, float, float]], *, title: str, unit: str) -> str:
    """Now and after for each label (a namespace): two horizontal bars, a value at the end of each."""
    left, width, row = 130, WIDTH - 130 - 60, 34
    axis_max = _axis_max(resource, [max(now, after) for _, now, after in rows], headroom=1.0)
    body = [
        f'<rect class="legend-now" x="{left}" y="20" width="12" height="10"/>',
        _text("legend", left + 16, 29, "now"),
        f'<rect class="legend-after" x="{left + 60}" y="20" width="12" height="10"/>',
        _text("legend", left + 76, 29, "with pod-tailor"),
    ]
    for index, (label, now, after) in enumerate(rows):
        y = 40 + index * row
        body.append(_text("label", left - 6, y + 17, label[:18], anchor="end"))
        for offset, (name, value) in enumerate((("now", now), ("after", after))):
            w, top = width * value / axis_max, y + offset * 13
            body.append(
                f'<rect class="bar-{name}" x="{left}" y="{top}" width="{w:.1f}" height="12" '
                f'data-label="{escape(label)}" data-value="{value:g}"/>'
            )
            body.append(_text("value", left + w + 4, top + 10, amount(resource, value)))
    bottom = 42 + row * len(rows)
    body.append(_x_axis(resource, axis_max, left=left, width=width, y=bottom, unit=unit))
    scale = {"axis-max": f"{axis_max:g}", "plot-left": left, "plot-width": width, "resource": resource}
    return _svg("bars", title, bottom + 36, scale, "".join(body))


def _width(text: str, size: float) -> float:
    """About how wide `text` is drawn at font `size` (sans-serif: 0.6 em a character, a little spare)."""
    return len(text) * size * 0.62 + 2


def _lane(extent: tuple[float, float], lanes: list[list[tuple[float, float]]], gap: float = 4) -> int | None:
    """The first lane where `extent` (left, right) clears every extent already in it (then taken), or
    None when every lane is full there."""
    for number, taken in enumerate(lanes):
        if all(extent[1] + gap <= left or right + gap <= extent[0] for left, right in taken):
            taken.append(extent)
            return number
    return None


# Marker label rows of a distribution chart, y of the baseline: two above the plot, two below it.
_ABOVE, _BELOW = (40.0, 28.0), (126.0, 138.0)


def _vertical_markers(
    markers: Sequence[Marker], x_of: Callable[[float], float], *, top: float, bottom: float
) -> tuple[str, str]:
    """Request and limit lines across the plot, and their labels (drawn last, over everything): each in
    the first row (above, then below) where it overlaps no other, anchored away from the right edge. A
    label with no room is left to the line's tooltip."""
    parts, labels = [], []
    lanes: list[list[tuple[float, float]]] = [[] for _ in (*_ABOVE, *_BELOW)]
    for marker in sorted(markers, key=lambda m: m.value):
        x = x_of(marker.value)
        width = _width(marker.label, 10)
        anchor = "end" if x + 3 + width > WIDTH - 2 else "start"
        extent = (x - 3 - width, x - 3) if anchor == "end" else (x + 3, x + 3 + width)
        parts.append(
            f'<line class="marker {marker.name}" x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" '
            f'data-value="{marker.value:g}"><title>{escape(marker.label)}</title></line>'
        )
        lane = _lane(extent, lanes)
        if lane is not None:
            y = (*_ABOVE, *_BELOW)[lane]
            x_text = x + 3 if anchor == "start" else x - 3
            labels.append(_text(f"marker-label {marker.name}", x_text, y, marker.label, anchor=anchor))
    return "".join(parts), "".join(labels)


def distribution(
    resource: str, quantiles: Mapping[str, float], markers: Sequence[Marker], *, title: str, unit: str
) -> str:
    """Usage quantiles as a box (p50 to p95) with whiskers (p99, max) against request and limit lines."""
    left, width = 40, WIDTH - 80
    top, middle, bottom, axis = 46.0, 70.0, 114.0, 146.0
    axis_max = _axis_max(resource, [*quantiles.values(), *(m.value for m in markers)])

    def x_of(value: float) -> float:
        return left + width * value / axis_max

    lines, labels = _vertical_markers(markers, x_of, top=top, bottom=bottom)
    body: list[str] = [lines]  # under the box and its names, whose halo keeps them readable
    if quantiles:
        q = {name: x_of(value) for name, value in quantiles.items()}
        low, high = q.get("p50", left), q.get("p95", q.get("max", left))
        far = max(q.get("max", high), q.get("p99", high))
        body.append(f'<line class="whisker" x1="{left}" y1="{middle}" x2="{far:.1f}" y2="{middle}"/>')
        box = f'x="{low:.1f}" y="{middle - 10}" width="{max(high - low, 1):.1f}" height="20"'
        body.append(f'<rect class="box" {box}/>')
        lanes: list[list[tuple[float, float]]] = [[], []]  # two rows of quantile names under the box
        for name, x in sorted(q.items(), key=lambda kv: kv[1]):
            body.append(
                f'<line class="quantile" x1="{x:.1f}" y1="{middle - 13}" x2="{x:.1f}" y2="{middle + 13}" '
                f'data-quantile="{name}" data-value="{quantiles[name]:g}"><title>{name} '
                f"{amount(resource, quantiles[name])}</title></line>"
            )
            half = _width(name, 11) / 2
            row = _lane((x - half, x + half), lanes, gap=2)
            if row is not None:  # else a crowded name is left to the line's tooltip
                body.append(_text("tick q", x, middle + 26 + 13 * row, name, anchor="middle"))
    else:
        body.append(_text("empty", left + 8, middle + 4, "no usage summary"))
    body.append(labels)
    body.append(_x_axis(resource, axis_max, left=left, width=width, y=axis, unit=unit))
    scale = {"axis-max": f"{axis_max:g}", "plot-left": left, "plot-width": width, "resource": resource}
    return _svg("distribution", title, axis + 36, scale, "".join(body))


def hourly(
    resource: str, curve: Sequence[float | None], markers: Sequence[Marker], *, title: str, unit: str
) -> str:
    """Usage by hour of day (UTC) as a line, against request and limit lines across the day."""
    left, width, top, plot = 56, WIDTH - 56 - 112, 34.0, 130.0
    bottom = top + plot
    known = [v for v in curve if v is not None]
    axis_max = _axis_max(resource, [*known, *(m.value for m in markers)])

    def y_of(value: float) -> float:
        return bottom - plot * value / axis_max

    def x_of(hour: float) -> float:
        return left + width * hour / 23

    body = [
        f'<line class="axis" x1="{left}" y1="{bottom}" x2="{left + width}" y2="{bottom}"/>',
        f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{bottom}"/>',
    ]
    for tick in _ticks(axis_max, binary=resource != "cpu"):
        y = y_of(tick)
        body.append(f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{left + width}" y2="{y:.1f}"/>')
        body.append(_text("tick", left - 5, y + 4, amount(resource, tick), anchor="end"))
    for hour in range(0, 24, 3):  # below the value axis' own "0", clear of it
        body.append(_text("tick", x_of(hour), bottom + 19, f"{hour:02d}h", anchor="middle"))
    body.append(_text("unit", left + width, bottom + 33, "hour of day (UTC)", anchor="end"))
    body.append(_text("unit", 4, bottom + 33, unit))
    if known:
        points = " ".join(f"{x_of(h):.1f},{y_of(v):.1f}" for h, v in enumerate(curve) if v is not None)
        body.append(f'<polyline class="usage" points="{points}"/>')
    else:
        body.append(_text("empty", left + 10, top + plot / 2, "no hourly usage"))
    placed: list[float] = []
    for marker in sorted(markers, key=lambda m: -m.value):  # top down, each label at or below the last
        y = y_of(marker.value)
        label_y = max(y + 4, placed[-1] + 12 if placed else top)
        placed.append(label_y)
        body.append(
            f'<line class="marker {marker.name}" x1="{left}" y1="{y:.1f}" x2="{left + width}" y2="{y:.1f}" '
            f'data-value="{marker.value:g}"><title>{escape(marker.label)}</title></line>'
        )
        body.append(_text(f"marker-label {marker.name}", left + width + 4, label_y, marker.label))
    height = max(bottom + 40, (placed[-1] + 6) if placed else 0)
    scale = {"axis-max": f"{axis_max:g}", "plot-top": top, "plot-height": plot, "resource": resource}
    return _svg("hourly", title, height, scale, "".join(body))
