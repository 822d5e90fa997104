"""The html around the html report and the dashboard's pages: one stylesheet, light and dark, no assets.

Everything is inline (the report is one file that opens offline; the dashboard serves no static
files), sized for a 1280x800 window, and follows the browser's `prefers-color-scheme`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

__all__ = ["SORT_SCRIPT", "STYLE", "Cell", "card", "document", "table"]

STYLE = """
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0;
  --panel: #f6f8fa; --now: #8c959f; --after: #0969da; --req-now: #9a6700; --req-after: #1a7f37;
  --lim-now: #cf222e; --lim-after: #8250df; --warn-bg: #fff8c5; --warn: #7d4e00; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --line: #3d444d; --panel: #151b23;
    --now: #6e7681; --after: #4493f8; --req-now: #d29922; --req-after: #3fb950; --lim-now: #f85149;
    --lim-after: #a371f7; --warn-bg: #341a00; --warn: #f0c674; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 1240px; margin: 0 auto; padding: 16px 20px 40px; }
header.top { border-bottom: 1px solid var(--line); background: var(--panel); }
header.top div { max-width: 1240px; margin: 0 auto; padding: 10px 20px; display: flex; gap: 18px;
  align-items: baseline; }
header.top b { font-size: 16px; }
a { color: var(--after); text-decoration: none; } a:hover { text-decoration: underline; }
h1 { font-size: 22px; margin: 8px 0 4px; } h2 { font-size: 17px; margin: 22px 0 8px; }
h3 { font-size: 15px; margin: 16px 0 6px; }
.muted, .sub { color: var(--muted); } .sub { margin: 0 0 12px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px;
  min-width: 150px; }
.card .k { color: var(--muted); font-size: 12px; } .card .v { font-size: 18px; font-weight: 600; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 14px; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--panel); font-weight: 600; white-space: nowrap; }
th a { color: var(--fg); } td.num, th.num { text-align: right; }
tr:hover td { background: var(--panel); }
.problems { background: var(--warn-bg); color: var(--warn); border-radius: 6px; padding: 8px 12px; }
.charts { display: flex; flex-wrap: wrap; gap: 14px; }
.tag { border: 1px solid var(--line); border-radius: 10px; padding: 0 7px; font-size: 12px; }
.tag.enforce { border-color: var(--req-after); color: var(--req-after); }
.tag.dry-run { border-color: var(--req-now); color: var(--req-now); }
.changed { color: var(--after); font-weight: 600; }
svg.chart { max-width: 100%; height: auto; font-size: 11px; }
svg.chart text { fill: var(--fg); }
svg.chart .caption { font-weight: 600; font-size: 12px; }
svg.chart .tick, svg.chart .unit { fill: var(--muted); }
svg.chart .axis { stroke: var(--muted); } svg.chart .grid { stroke: var(--line); }
svg.chart .bar-now, svg.chart .legend-now { fill: var(--now); }
svg.chart .bar-after, svg.chart .legend-after { fill: var(--after); }
svg.chart .box { fill: var(--after); fill-opacity: .35; stroke: var(--after); }
svg.chart .whisker, svg.chart .quantile { stroke: var(--after); stroke-width: 1.5; }
svg.chart .usage { fill: none; stroke: var(--after); stroke-width: 2; }
svg.chart .marker { stroke-width: 2; } svg.chart .empty { fill: var(--muted); }
svg.chart .request-now { stroke: var(--req-now); fill: var(--req-now); stroke-dasharray: 5 3; }
svg.chart .request-after { stroke: var(--req-after); fill: var(--req-after); }
svg.chart .limit-now { stroke: var(--lim-now); fill: var(--lim-now); stroke-dasharray: 5 3; }
svg.chart .limit-after { stroke: var(--lim-after); fill: var(--lim-after); }
svg.chart .startup { stroke: var(--muted); fill: var(--muted); stroke-dasharray: 2 3; }
svg.chart text.marker-label { font-size: 10px; }
svg.chart text.marker-label, svg.chart text.q { paint-order: stroke; stroke: var(--bg); stroke-width: 3px;
  stroke-linejoin: round; } /* a halo: a line crossing a label leaves it readable */
details summary { cursor: pointer; }
code { font-size: 12px; }
"""

# The html report's tables sort when a header is clicked (a static file has no server to ask).
SORT_SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th) {
  var column = th.cellIndex;
  th.style.cursor = "pointer";
  th.addEventListener("click", function () {
    var body = th.closest("table").tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var down = th.dataset.order !== "asc";
    th.dataset.order = down ? "asc" : "desc";
    function key(row) { var c = row.cells[column]; return c ? (c.dataset.sort || c.textContent) : ""; }
    rows.sort(function (a, b) {
      var x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
      var r = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return down ? r : -r;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  });
});
"""


def document(title: str, body: str, *, nav: str = "", script: str = "") -> str:
    """A complete html page; `nav` goes into the top bar."""
    scripts = f"<script>{script}</script>" if script else ""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
        f'<header class="top"><div><b>pod-tailor</b>{nav}</div></header>'
        f"<main>{body}</main>{scripts}</body></html>"
    )


def card(key: str, value: str, *, note: str = "") -> str:
    extra = f'<div class="k">{escape(note)}</div>' if note else ""
    head = f'<div class="k">{escape(key)}</div><div class="v">{escape(value)}</div>'
    return f'<div class="card">{head}{extra}</div>'


Cell = str | tuple[str, str]  # html, or (html, sort key)


def _cell(tag: str, cell: Cell, *, right: bool) -> str:
    html, key = cell if isinstance(cell, tuple) else (cell, None)
    attributes = (" class=num" if right else "") + (f' data-sort="{escape(key)}"' if key is not None else "")
    return f"<{tag}{attributes}>{html}</{tag}>"


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Cell]],
    *,
    numeric: Iterable[int] = (),
    css: str = "",
    raw_headers: bool = False,
) -> str:
    """Cells are html already (callers escape text); `numeric` columns are right-aligned."""
    right = set(numeric)
    head = "".join(
        _cell("th", h if raw_headers else escape(h), right=i in right) for i, h in enumerate(headers)
    )
    body = "".join(
        "<tr>" + "".join(_cell("td", cell, right=i in right) for i, cell in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
