"""`-o html`: the whole report as one self-contained page (inline css, svg and a small sort script).

It opens offline from a file or a CI artifact: no CDN, no fonts, no images fetched. Namespaces get
bar charts of what they request now and after; every container is a row; workloads with a usage
summary get their charts in a collapsed section each.
"""

from __future__ import annotations

from html import escape

from webhook.report.document import stamp
from webhook.report.model import Report, WorkloadReport
from webhook.report.page import SORT_SCRIPT, document
from webhook.report.views import (
    container_detail,
    container_rows,
    namespace_charts,
    namespace_table,
    problems,
    summary_cards,
)

__all__ = ["CHARTED", "render_html"]

CHARTED = 100  # workloads drawn in full in the html report


def _anchor(workload: WorkloadReport) -> str:
    source = f"-{workload.source}" if workload.source else ""  # two files may hold the same workload
    return f"#w-{workload.namespace}-{workload.kind}-{workload.name}{source}"


def _weight(workload: WorkloadReport) -> float:
    """How much a workload's requests change, all its Pods together (1 core weighs as 4 GiB)."""
    now, after = workload.requests
    cpu = abs(float(after.get("cpu", 0)) - float(now.get("cpu", 0)))
    memory = abs(float(after.get("memory", 0)) - float(now.get("memory", 0))) / 2**32
    return (cpu + memory) * max(workload.replicas, 1)


def _charted(report: Report) -> list[WorkloadReport]:
    """The workloads that get charts: with a usage summary, the `CHARTED` whose requests change most."""
    drawn = [w for w in report.workloads if any(c.summary is not None for c in w.containers)]
    chosen = {id(w) for w in sorted(drawn, key=_weight, reverse=True)[:CHARTED]}
    return [w for w in drawn if id(w) in chosen]


def _details(report: Report, charted: list[WorkloadReport]) -> str:
    """Charts for the workloads in `charted`, collapsed: a fleet has thousands of containers, and the
    page must stay a file a browser opens quickly (the dashboard draws every workload)."""
    parts = []
    for workload in charted:
        body = "".join(container_detail(workload, c) for c in workload.containers)
        parts.append(
            f'<details id="{escape(_anchor(workload)[1:])}"><summary>{escape(workload.namespace)} / '
            f"{escape(workload.kind)}/{escape(workload.name)}</summary>{body}</details>"
        )
    if not parts:
        return ""
    note = (
        f'<p class="sub">The {len(parts)} workloads whose requests change most (of those with a usage '
        "summary); <code>pod-tailor dashboard</code> draws every one.</p>"
    )
    return "<h2>Usage against requests</h2>" + note + "".join(parts)


def render_html(report: Report) -> str:
    charted = _charted(report)
    anchored = {id(w) for w in charted}
    generated = stamp(report.generated_at) or "-"
    built = stamp(report.profiles_at) or "never"
    body = (
        "<h1>What pod-tailor would do</h1>"
        f'<p class="sub">{escape(report.source)}; generated {generated}; profiles: {escape(report.profiles)}'
        f" (built {built})</p>"
        + problems(report)
        + summary_cards(report.cluster)
        + "<h2>Requests per namespace</h2>"
        + namespace_charts(report)
        + "<h2>Namespaces</h2>"
        + namespace_table(report)
        + "<h2>Containers</h2>"
        + container_rows(report.workloads, link=lambda w: _anchor(w) if id(w) in anchored else "")
        + _details(report, charted)
    )
    return document("pod-tailor report", body, script=SORT_SCRIPT)
