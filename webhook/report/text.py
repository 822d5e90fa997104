"""`-o table` and `-o wide`: kubectl-like columns, one row per container, then the totals.

What belongs to the Pod rather than to a container (the grace period; in `wide` the workload's own
warnings) has a row of its own, `(pod)`, after the containers. Two workloads of the same namespace,
kind and name read from different files are told apart by their file.

On a terminal the table fits its width: optional columns go first, then the widest text columns are
cut with `…`. Piped output is never cut (scripts and `less -S` want every character).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from webhook.report.model import ContainerReport, Report, Totals, WorkloadReport
from webhook.report.units import amount

__all__ = ["POD_ROW", "Column", "fit", "render_table"]

POD_ROW = "(pod)"  # the CONTAINER of the row that holds the Pod's own values


@dataclass(frozen=True, slots=True)
class Column:
    title: str
    drop: int = 0  # 0: always shown; higher numbers are dropped first when the terminal is narrow
    cut: bool = False  # may be shortened with an ellipsis


def _change(resource: str, now: object, after: object) -> str:
    before, later = amount(resource, now), amount(resource, after)  # type: ignore[arg-type]
    return later if before == later else f"{before}→{later}"


def _cell(container: ContainerReport, field: str) -> str:
    """`250m` when unchanged, `-→250m` or `1→1155m` when pod-tailor would change it."""
    resource = field.split(".", 1)[1]
    return _change(resource, container.value("current", field), container.value("recommended", field))


_SHORT = {
    "readinessProbe": "readiness",
    "startupProbe": "startup",
    "livenessProbe": "liveness",
    "preStop": "preStop",
    "terminationGracePeriodSeconds": "grace",
}


def _adds(container: ContainerReport) -> str:
    parts = [
        f"preStop={a.value.removeprefix('sleep ')}" if a.field == "preStop" else _SHORT.get(a.field, a.field)
        for a in container.adds
    ]
    return ",".join(parts) or "-"


def _pod_adds(workload: WorkloadReport) -> str:
    parts = [
        f"grace={a.value}s" if a.field == "terminationGracePeriodSeconds" else _SHORT.get(a.field, a.field)
        for a in workload.pod_adds
    ]
    return ",".join(parts) or "-"


def _names(report: Report) -> dict[int, str]:
    """id(workload) -> `Kind/name`, with ` (file)` where another file has the same namespace, kind, name."""
    seen = Counter((w.namespace, w.kind, w.name) for w in report.workloads)
    twice = {id(w) for w in report.workloads if w.source and seen[w.namespace, w.kind, w.name] > 1}
    return {id(w): f"{w.kind}/{w.name}" + (f" ({w.source})" if id(w) in twice else "")
            for w in report.workloads}


def _confidence(container: ContainerReport) -> str:
    found = [o.confidence for o in container.sources.values() if o.confidence is not None]
    return f"{min(found):.2f}" if found else "-"


def _rows(report: Report, *, wide: bool) -> tuple[list[Column], list[list[str]]]:
    columns = [
        Column("NAMESPACE"),
        Column("WORKLOAD", cut=True),
        Column("CONTAINER", cut=True),
        Column("CPU REQUEST"),
        Column("MEMORY REQUEST"),
        Column("FROM", drop=2),
        Column("ADDS", drop=1, cut=True),
    ]
    if wide:
        columns[3:3] = [Column("REPLICAS", drop=4), Column("MODE", drop=3)]
        columns += [
            Column("CPU LIMIT", drop=5),
            Column("MEMORY LIMIT", drop=5),
            Column("CONFIDENCE", drop=6),
            Column("WARNINGS", drop=7, cut=True),
            Column("TRAFFIC PATH", drop=8, cut=True),
        ]
    rows = []
    names = _names(report)
    for workload in report.workloads:
        mode = workload.mode + ("*" if workload.assumed else "")
        for container in workload.containers:
            cells = [workload.namespace, names[id(workload)], container.name]
            if wide:
                cells += [str(workload.replicas), mode]
            cells += [
                _cell(container, "requests.cpu"),
                _cell(container, "requests.memory"),
                container.origins,
                _adds(container),
            ]
            if wide:
                cells += [
                    _cell(container, "limits.cpu"),
                    _cell(container, "limits.memory"),
                    _confidence(container),
                    "; ".join(container.warnings) or "-",
                    container.traffic_path or "-",
                ]
            rows.append(cells)
        if workload.pod_adds or (wide and workload.warnings):
            cells = [workload.namespace, names[id(workload)], POD_ROW]
            cells += [str(workload.replicas), mode] if wide else []
            cells += ["", "", "", _pod_adds(workload)]
            cells += ["", "", "", "; ".join(workload.warnings) or "-", ""] if wide else []
            rows.append(cells)
    return columns, rows


def _ratio(pair: tuple[int, int], of: int) -> str:
    return f"{pair[0]}→{pair[1]}" + (f" of {of}" if of else "")


def _totals_rows(report: Report, *, wide: bool) -> tuple[list[Column], list[list[str]]]:
    columns = [
        Column("NAMESPACE"),
        Column("MODE", drop=3),
        Column("POLICY", drop=4),
        Column("WORKLOADS", drop=2),
        Column("CHANGED"),
        Column("PODS", drop=2),
        Column("CPU REQUESTS"),
        Column("MEMORY REQUESTS"),
        Column("NO REQUESTS", drop=1),
        Column("NO READINESS", drop=1),
        Column("NO PRESTOP", drop=1),
    ]
    if wide:
        columns += [Column("CPU LIMITS", drop=5), Column("MEMORY LIMITS", drop=5)]

    def row(name: str, mode: str, policy: str, t: Totals) -> list[str]:
        cells = [
            name,
            mode,
            policy,
            str(t.workloads),
            str(t.changed),
            str(t.pods),
            _change("cpu", t.requests_now.get("cpu"), t.requests_after.get("cpu")),
            _change("memory", t.requests_now.get("memory"), t.requests_after.get("memory")),
            _ratio(t.without_requests, t.containers),
            _ratio(t.without_readiness, t.serving),
            _ratio(t.without_pre_stop, t.serving),
        ]
        if wide:
            cells += [
                _change("cpu", t.limits_now.get("cpu"), t.limits_after.get("cpu")),
                _change("memory", t.limits_now.get("memory"), t.limits_after.get("memory")),
            ]
        return cells

    modes, policies = report.modes, report.policies
    rows = [row(ns, modes.get(ns, "-"), policies.get(ns, "-"), t) for ns, t in report.namespaces.items()]
    if len(report.namespaces) != 1:
        rows.append(row("(all)", "", "", report.cluster))
    return columns, rows


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def fit(columns: Sequence[Column], rows: Sequence[Sequence[str]], *, width: int | None) -> str:
    """Aligned columns separated by three spaces, made to fit `width` (None: no limit)."""
    shown = list(range(len(columns)))
    widths = [max([len(columns[i].title), *(len(r[i]) for r in rows)]) for i in range(len(columns))]

    def total() -> int:
        return sum(widths[i] for i in shown) + 3 * (len(shown) - 1)

    if width is not None:
        for level in sorted({c.drop for c in columns if c.drop}, reverse=True):
            if total() <= width:
                break
            shown = [i for i in shown if columns[i].drop != level]
        while total() > width:
            cuttable = [i for i in shown if columns[i].cut and widths[i] > len(columns[i].title) + 2]
            if not cuttable:
                break
            widest = max(cuttable, key=lambda i: widths[i])
            widths[widest] -= min(total() - width, widths[widest] - len(columns[widest].title) - 2)
    lines = ["   ".join(columns[i].title.ljust(widths[i]) for i in shown).rstrip()]
    lines += ["   ".join(_cut(r[i], widths[i]).ljust(widths[i]) for i in shown).rstrip() for r in rows]
    return "\n".join(lines) + "\n"


def render_table(report: Report, *, wide: bool = False, width: int | None = None) -> str:
    """Containers, then totals per namespace (and for all when there are several)."""
    if not report.workloads:
        return "No workloads found.\n"
    columns, rows = _rows(report, wide=wide)
    out = fit(columns, rows, width=width)
    columns, rows = _totals_rows(report, wide=wide)
    out += "\n" + fit(columns, rows, width=width)
    if any(w.assumed for w in report.workloads):
        out += "\n* not opted in: evaluated as if labelled pod-tailor.io/mode=enforce (--all-namespaces)\n"
    if report.in_place:
        out += "\nResized in place (pod-tailor rightsize):\n"
        out += "".join(f"  {key}: {text}\n" for key, text in report.in_place.items())
    return out
