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

__all__ = ["render_html"]


def _anchor(workload: WorkloadReport) -> str:
    return f"#w-{workload.namespace}-{workload.kind}-{workload.name}"


def _drawn(workload: WorkloadReport) -> bool:
    return any(c.summary is not None for c in workload.containers)


def _details(report: Report) -> str:
    """Charts for the workloads that have usage summaries, collapsed (a fleet has thousands)."""
    parts = []
    for workload in report.workloads:
        if not _drawn(workload):
            continue
        body = "".join(container_detail(workload, c) for c in workload.containers)
        parts.append(
            f'<details id="{escape(_anchor(workload)[1:])}"><summary>{escape(workload.namespace)} / '
            f"{escape(workload.kind)}/{escape(workload.name)}</summary>{body}</details>"
        )
    if not parts:
        return ""
    return "<h2>Usage against requests</h2>" + "".join(parts)


def render_html(report: Report) -> str:
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
        + container_rows(report.workloads, link=lambda w: _anchor(w) if _drawn(w) else "")
        + _details(report)
    )
    return document("pod-tailor report", body, script=SORT_SCRIPT)
