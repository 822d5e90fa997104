"""Html fragments of a report, shared by the html report (one file) and the dashboard (pages).

Each takes report values and returns html; links are made by the caller's `link` functions (the
report links within the page, the dashboard to its own pages), so both draw the same things.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from html import escape

from webhook.core.model.profile import NoRecommendation, Recommendation
from webhook.report.charts import Marker, bars, distribution, hourly
from webhook.report.model import RESOURCE_FIELDS, ContainerReport, Report, Totals, WorkloadReport
from webhook.report.page import Cell, card, table
from webhook.report.units import amount

__all__ = [
    "container_detail",
    "container_rows",
    "markers",
    "namespace_charts",
    "namespace_table",
    "problems",
    "summary_cards",
    "workload_rows",
]

GIB = 2**30
Link = Callable[[WorkloadReport], str]


def _change(resource: str, now: Decimal | None, after: Decimal | None) -> Cell:
    """`250m`, or `-→250m` with the after value as the sort key."""
    before, later = amount(resource, now), amount(resource, after)
    changed = f'{escape(before)}→<span class="changed">{escape(later)}</span>'
    text = escape(later) if before == later else changed
    return text, f"{float(after or 0):.6f}"


def _with_limit(
    resource: str, requests: Cell, limit_now: Decimal | None, limit_after: Decimal | None
) -> Cell:
    """A request cell with the limit under it (`limit 1Gi`, `limit -→2Gi`), when there is one."""
    if limit_now is None and limit_after is None:
        return requests
    html, key = requests if isinstance(requests, tuple) else (requests, "")
    limit = _change(resource, limit_now, limit_after)[0]
    return f'{html}<br><span class="muted limit">limit {limit}</span>', key


def _pair(values: tuple[int, int], of: int) -> Cell:
    text = f"{values[0]}→{values[1]}" if values[0] != values[1] else str(values[0])
    return (escape(text) + (f' <span class="muted">of {of}</span>' if of else "")), str(values[1])


def summary_cards(totals: Totals) -> str:
    if not totals.workloads:
        return '<div class="cards">' + card("workloads", "none", note="nothing in scope to show") + "</div>"
    cpu = totals.requests_now.get("cpu"), totals.requests_after.get("cpu")
    memory = totals.requests_now.get("memory"), totals.requests_after.get("memory")

    def limits(resource: str) -> str:
        now, after = totals.limits_now.get(resource), totals.limits_after.get(resource)
        if now is None and after is None:
            return "no limits"
        return f"limits {amount(resource, now)} → {amount(resource, after)}"

    return (
        '<div class="cards">'
        + "".join(
            [
                card(
                    "workloads changed", f"{totals.changed} of {totals.workloads}", note=f"{totals.pods} Pods"
                ),
                card(
                    "CPU requested",
                    f"{amount('cpu', cpu[0])} → {amount('cpu', cpu[1])}",
                    note=f"cores, all Pods; {limits('cpu')}",
                ),
                card(
                    "memory requested",
                    f"{amount('memory', memory[0])} → {amount('memory', memory[1])}",
                    note=f"all Pods; {limits('memory')}",
                ),
                card(
                    "no requests",
                    "{} → {}".format(*totals.without_requests),
                    note=f"of {totals.containers} containers",
                ),
                card(
                    "no readiness probe",
                    "{} → {}".format(*totals.without_readiness),
                    note=f"of {totals.serving} serving containers",
                ),
                card(
                    "no preStop pause",
                    "{} → {}".format(*totals.without_pre_stop),
                    note=f"of {totals.serving} serving containers",
                ),
            ]
        )
        + "</div>"
    )


def problems(report: Report) -> str:
    if not report.problems:
        return ""
    items = "".join(f"<li>{escape(p)}</li>" for p in report.problems)
    return f'<div class="problems"><b>Not everything could be read:</b><ul>{items}</ul></div>'


def namespace_charts(report: Report, *, top: int = 20) -> str:
    """CPU and memory requested per namespace, now and after (the largest `top` namespaces)."""
    ranked = sorted(
        report.namespaces.items(),
        key=lambda kv: -float(max(kv[1].requests_now.get("cpu", 0), kv[1].requests_after.get("cpu", 0))),
    )[:top]
    note = f" (the {top} largest of {len(report.namespaces)})" if len(report.namespaces) > top else ""
    cpu = [
        (ns, float(t.requests_now.get("cpu", 0)), float(t.requests_after.get("cpu", 0))) for ns, t in ranked
    ]
    memory = [
        (ns, float(t.requests_now.get("memory", 0)), float(t.requests_after.get("memory", 0)))
        for ns, t in ranked
    ]
    return (
        '<div class="charts">'
        + bars("cpu", cpu, title=f"CPU requested per namespace{note}", unit="cores (all Pods)")
        + bars("memory", memory, title=f"memory requested per namespace{note}", unit="bytes (all Pods)")
        + "</div>"
    )


def namespace_table(
    report: Report, *, link: Callable[[str], str] | None = None, ages: dict[str, str] | None = None
) -> str:
    headers = [
        "namespace",
        "mode",
        "policy",
        "workloads",
        "changed",
        "Pods",
        "CPU requests",
        "memory requests",
        "no requests",
        "no readiness",
        "no preStop",
    ]
    if ages is not None:
        headers.append("profiles")
    rows = []
    for ns, t in report.namespaces.items():
        mode = report.modes.get(ns, "")
        name = f'<a href="{escape(link(ns))}">{escape(ns)}</a>' if link else escape(ns)
        row: list[Cell] = [
            (name, ns),
            f'<span class="tag {escape(mode)}">{escape(mode)}</span>',
            escape(report.policies.get(ns, "")),
            str(t.workloads),
            str(t.changed),
            str(t.pods),
            _with_limit(
                "cpu", _change("cpu", t.requests_now.get("cpu"), t.requests_after.get("cpu")),
                t.limits_now.get("cpu"), t.limits_after.get("cpu"),
            ),
            _with_limit(
                "memory", _change("memory", t.requests_now.get("memory"), t.requests_after.get("memory")),
                t.limits_now.get("memory"), t.limits_after.get("memory"),
            ),
            _pair(t.without_requests, t.containers),
            _pair(t.without_readiness, t.serving),
            _pair(t.without_pre_stop, t.serving),
        ]
        if ages is not None:
            row.append(escape(ages.get(ns, "none")))
        rows.append(row)
    return table(headers, rows, numeric=range(3, 11), css="sortable namespaces")


_SHORT = {
    "readinessProbe": "readiness",
    "startupProbe": "startup",
    "livenessProbe": "liveness",
    "terminationGracePeriodSeconds": "grace",
}


def _adds(container: ContainerReport) -> str:
    return escape(", ".join(_SHORT.get(a.field, a.field) for a in container.adds) or "-")


def container_rows(workloads: Iterable[WorkloadReport], *, link: Link | None = None) -> str:
    """One row per container, then one for the Pod's own values (grace, the workload's warnings), as
    `-o table` prints them."""
    rows: list[list[Cell]] = []
    for workload in workloads:
        label = f"{workload.kind}/{workload.name}"
        href = link(workload) if link else ""
        name = f'<a href="{escape(href)}">{escape(label)}</a>' if href else escape(label)
        for body in workload.containers:
            rows.append(
                [
                    escape(workload.namespace),
                    (name, label),
                    escape(body.name),
                    _change(
                        "cpu",
                        body.value("current", "requests.cpu"),
                        body.value("recommended", "requests.cpu"),
                    ),
                    _change(
                        "memory",
                        body.value("current", "requests.memory"),
                        body.value("recommended", "requests.memory"),
                    ),
                    escape(body.origins),
                    _adds(body),
                    escape("; ".join(body.warnings)) or "-",
                ]
            )
        if workload.pod_adds or workload.warnings:  # the Pod's own values: a row of their own
            adds = ", ".join(_SHORT.get(a.field, a.field) for a in workload.pod_adds) or "-"
            warnings = "; ".join(workload.warnings) or "-"
            rows.append([escape(workload.namespace), (name, label), "(pod)", "", "", "", escape(adds),
                         escape(warnings)])
    headers = [
        "namespace",
        "workload",
        "container",
        "CPU request",
        "memory request",
        "from",
        "adds",
        "warnings",
    ]
    return table(headers, rows, css="sortable containers")


def workload_rows(workloads: Sequence[WorkloadReport], *, link: Link, headers: Sequence[str]) -> str:
    """One row per workload (the dashboard's namespace page); `headers` may be sort links."""
    rows = []
    for w in workloads:
        cpu = _with_limit(
            "cpu", _change("cpu", w.requests[0].get("cpu"), w.requests[1].get("cpu")),
            w.limits[0].get("cpu"), w.limits[1].get("cpu"),
        )
        memory = _with_limit(
            "memory", _change("memory", w.requests[0].get("memory"), w.requests[1].get("memory")),
            w.limits[0].get("memory"), w.limits[1].get("memory"),
        )
        origins = dict.fromkeys(c.origins for c in w.containers if c.sources)
        fields = {a.field for c in w.containers for a in c.adds} | {a.field for a in w.pod_adds}
        adds = sorted(_SHORT.get(field, field) for field in fields)
        warnings = len(w.warnings) + sum(len(c.warnings) for c in w.containers)
        rows.append(
            [
                f'<a href="{escape(link(w))}">{escape(w.kind)}/{escape(w.name)}</a>',
                str(w.replicas),
                str(len(w.containers)),
                cpu,
                memory,
                escape("; ".join(origins) or "-"),
                escape(", ".join(adds) or "-"),
                str(warnings) if warnings else "-",
                '<span class="changed">yes</span>' if w.changed else "no",
            ]
        )
    return table(headers, rows, numeric=(1, 2, 3, 4, 7), css="workloads", raw_headers=True)


def markers(container: ContainerReport, resource: str) -> list[Marker]:
    """Today's and the recommended request and limit of `resource`, one line if they are the same."""
    out = []
    for section, what in (("requests", "request"), ("limits", "limit")):
        now = container.value("current", f"{section}.{resource}")
        after = container.value("recommended", f"{section}.{resource}")
        if now is not None and now == after:
            out.append(Marker(f"{what}-after", f"{what} {amount(resource, now)}", float(now)))
            continue
        if now is not None:
            out.append(Marker(f"{what}-now", f"{what} now {amount(resource, now)}", float(now)))
        if after is not None:
            out.append(Marker(f"{what}-after", f"{what} after {amount(resource, after)}", float(after)))
    profile = container.profile
    if resource == "cpu" and isinstance(profile, Recommendation) and profile.startup_cpu is not None:
        peak = profile.startup_cpu
        out.append(Marker("startup", f"start-up peak {amount('cpu', peak)}", float(peak)))
    return out


def _field_rows(container: ContainerReport) -> str:
    rows = []
    for key in RESOURCE_FIELDS:
        origin = container.sources.get(key)
        now, after = container.value("current", key), container.value("recommended", key)
        if origin is None and now is None and after is None:
            continue
        resource = key.split(".", 1)[1]
        evidence = ""
        if origin is not None and origin.confidence is not None:
            evidence = f" (confidence {origin.confidence:.2f})"
        later = escape(amount(resource, after))
        shown = f'<span class="changed">{later}</span>' if after != now else later
        rows.append(
            [
                f"<code>{escape(key)}</code>",
                escape(amount(resource, now)),
                shown,
                escape(origin.kind if origin else "-"),
                escape((origin.detail if origin else "") + evidence),
            ]
        )
    for added in container.adds:
        value = f'<span class="changed">{escape(added.value)}</span>'
        rows.append([f"<code>{escape(added.field)}</code>", "-", value, "added", escape(added.source)])
    return table(["field", "now", "with pod-tailor", "from", "why"], rows, css="fields")


def _profile_line(container: ContainerReport) -> str:
    profile = container.profile
    if isinstance(profile, NoRecommendation):
        return f'<p class="muted">No recommendation from history: {escape(profile.reason)}.</p>'
    if not isinstance(profile, Recommendation):
        return '<p class="muted">No usage profile for this container.</p>'
    ev = profile.evidence
    text = (
        f"Profile: p{ev.cpu_percentile:g} CPU {amount('cpu', profile.cpu)}, "
        f"memory peak +{ev.memory_margin:.0%} "
        f"{amount('memory', profile.memory)} over {ev.window} ({ev.hours:.0f}h, {ev.samples} samples, "
        f"confidence {ev.confidence:.2f}{', ' + str(ev.oom_kills) + ' OOM kill(s)' if ev.oom_kills else ''})."
    )
    if profile.startup_cpu is not None:
        lasted = f" for {profile.startup_seconds:.0f}s" if profile.startup_seconds is not None else ""
        text += f" Start-up peak {amount('cpu', profile.startup_cpu)} cores{lasted}."
    return f'<p class="muted">{escape(text)}</p>'


def container_detail(workload: WorkloadReport, container: ContainerReport) -> str:
    """One container: its fields now and after with their reasons, and its usage against them (charts
    only when the store holds a usage summary to draw: request lines alone on empty axes say nothing)."""
    summary = container.summary
    charts = []
    for resource, unit, label in (("cpu", "cores", "CPU"), ("memory", "bytes", "memory")):
        if summary is None:
            break
        lines = markers(container, resource)
        title = f"{container.name}: {label} usage distribution"
        charts.append(distribution(resource, dict(getattr(summary, resource)), lines, unit=unit, title=title))
        curve = summary.cpu_by_hour if resource == "cpu" else summary.memory_by_hour
        title = f"{container.name}: {label} usage by hour of day"
        charts.append(hourly(resource, list(curve), lines, unit=unit, title=title))
    basis = (
        f'<p class="muted">Usage summary: {escape(summary.basis)}, {summary.samples} points.</p>'
        if summary is not None
        else '<p class="muted">No usage summary in the profile store: nothing to draw.</p>'
    )
    warnings = "".join(f"<li>{escape(w)}</li>" for w in container.warnings)
    return (
        f'<section class="container" id="c-{escape(container.name)}"><h3>{escape(container.name)} '
        f'<span class="muted">({escape(container.role)})</span></h3>'
        + _field_rows(container)
        + _profile_line(container)
        + basis
        + (f"<ul class=warnings>{warnings}</ul>" if warnings else "")
        + ('<div class="charts">' + "".join(charts) + "</div>" if charts else "")
        + "</section>"
    )
