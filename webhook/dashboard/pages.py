"""The dashboard's three pages, rendered on the server: the namespaces, one namespace, one workload.

No script: tables sort through links (`?sort=cpu&order=desc`), charts are inline SVG. The same
fragments draw the html report (`webhook.report.views`), so both show the same things the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from decimal import Decimal
from html import escape
from urllib.parse import quote

from webhook.dashboard.fleet import Fleet
from webhook.report.document import stamp
from webhook.report.model import Report, WorkloadReport
from webhook.report.page import document, table
from webhook.report.views import (
    container_detail,
    namespace_charts,
    namespace_table,
    problems,
    summary_cards,
    workload_rows,
)

__all__ = ["SORTS", "namespace_page", "namespaces_page", "not_found", "workload_page"]


def namespace_href(namespace: str) -> str:
    return f"/namespaces/{quote(namespace)}"


def workload_href(workload: WorkloadReport) -> str:
    path = f"/namespaces/{quote(workload.namespace)}/{quote(workload.kind)}/{quote(workload.name)}"
    return path + (f"?source={quote(workload.source, safe='')}" if workload.source else "")


def _age(epoch: float, now: float) -> str:
    if not epoch:
        return "never"
    hours = (now - epoch) / 3600
    return (
        f"{hours * 60:.0f} min ago"
        if hours < 1
        else f"{hours:.1f} h ago"
        if hours < 48
        else f"{hours / 24:.0f} d ago"
    )


def _nav(*crumbs: tuple[str, str]) -> str:
    links = ['<a href="/">fleet</a>'] + [
        f'<a href="{escape(href)}">{escape(text)}</a>' for text, href in crumbs
    ]
    return '<span class="muted">' + " / ".join(links) + "</span>"


def _profiles(report: Report) -> str:
    """`profiles: file ... (built 2.0 h ago)`, or that none are built yet and how to build them."""
    if not report.profiles_at:
        return "profiles: none built yet (<code>pod-tailor profiles build</code> builds them)"
    built = _age(report.profiles_at, time.time())
    return f"profiles: {escape(report.profiles)} (built {escape(built)})"


def _status(fleet: Fleet, error: str | None) -> str:
    report = fleet.report
    line = (
        f'<p class="sub">{escape(report.source)}; read {escape(stamp(report.generated_at) or "-")} '
        f"in {fleet.seconds:.1f}s; {_profiles(report)}</p>"
    )
    if error:
        line += f'<div class="problems"><b>Last refresh failed, showing older data:</b> {escape(error)}</div>'
    return line + problems(report)


def namespaces_page(fleet: Fleet, *, error: str | None = None) -> str:
    report, now = fleet.report, time.time()
    ages = {
        ns: (f"built {_age(report.profiles_at, now)}" if ns in fleet.profiled else "none")
        for ns in report.namespaces
    }
    body = (
        "<h1>Namespaces</h1>"
        + _status(fleet, error)
        + summary_cards(report.cluster)
        + ("<h2>Requests per namespace</h2>" + namespace_charts(report) if report.namespaces else "")
        + "<h2>What pod-tailor would do, per namespace</h2>"
        + (
            namespace_table(report, link=namespace_href, ages=ages)
            if report.namespaces
            else "<p>No workloads in scope: no namespace is opted in (label pod-tailor.io/mode).</p>"
        )
        + _not_opted_in(fleet.not_opted_in)
    )
    return document("pod-tailor dashboard", body, nav=_nav())


def _not_opted_in(namespaces: Sequence[str], *, shown: int = 30) -> str:
    """The cluster's other namespaces, by name, and how to see what pod-tailor would do there."""
    if not namespaces:
        return ""
    names = ", ".join(escape(ns) for ns in namespaces[:shown])
    more = f" and {len(namespaces) - shown} more" if len(namespaces) > shown else ""
    return (
        f"<h2>Not opted in ({len(namespaces)})</h2>"
        f'<p class="not-opted-in">{names}{more}.</p>'
        '<p class="muted">pod-tailor leaves their Pods alone. Label one '
        "<code>pod-tailor.io/mode=dry-run</code> to see it here, or start the dashboard with "
        "<code>-A</code> to see every namespace as if it were opted in.</p>"
    )


# Sort keys of the namespace page: the column, and the value a workload sorts by.
SORTS: dict[str, Callable[[WorkloadReport], object]] = {
    "name": lambda w: (w.kind, w.name),
    "replicas": lambda w: w.replicas,
    "containers": lambda w: len(w.containers),
    "cpu": lambda w: w.requests[1].get("cpu", Decimal(0)),
    "memory": lambda w: w.requests[1].get("memory", Decimal(0)),
    "warnings": lambda w: len(w.warnings) + sum(len(c.warnings) for c in w.containers),
    "changed": lambda w: w.changed,
}
_COLUMNS = (
    ("workload", "name"),
    ("replicas", "replicas"),
    ("containers", "containers"),
    ("CPU requests (per Pod)", "cpu"),
    ("memory requests (per Pod)", "memory"),
    ("from", ""),
    ("adds", ""),
    ("warnings", "warnings"),
    ("changes", "changed"),
)


def _headers(namespace: str, sort: str, order: str) -> list[str]:
    out = []
    for title, key in _COLUMNS:
        if not key:
            out.append(escape(title))
            continue
        flip = "asc" if key == sort and order == "desc" else "desc" if key == sort else "asc"
        arrow = (" ▲" if order == "asc" else " ▼") if key == sort else ""
        href = f"{namespace_href(namespace)}?sort={key}&amp;order={flip}"
        out.append(f'<a href="{href}" data-sort="{key}">{escape(title)}{arrow}</a>')
    return out


def _dry_run_panel(fleet: Fleet, namespace: str, workloads: Sequence[WorkloadReport]) -> str:
    mode = fleet.report.modes.get(namespace, "off")
    if mode != "dry-run":
        enforced = "pod-tailor sets what the table below says (<code>pod_tailor_injections_total</code>)."
        idle = "pod-tailor leaves its Pods alone; the table shows what it would do."
        return f'<p class="muted">Mode {escape(mode)}: {enforced if mode == "enforce" else idle}</p>'
    seen = fleet.dry_run
    planned: dict[str, int] = {}
    for w in workloads:
        for added in [*(a for c in w.containers for a in c.adds), *w.pod_adds]:
            planned[added.field] = planned.get(added.field, 0) + 1
        for c in w.containers:
            for key in c.sources:
                after = c.value("recommended", key)
                if after is not None and after != c.value("current", key):
                    planned[key] = planned.get(key, 0) + 1
    counted = seen.values.get(namespace, {})
    fields = sorted(set(planned) | set(counted))
    rows = [
        [
            f"<code>{escape(f)}</code>",
            str(counted.get(f, 0)) if seen.error is None else "-",
            str(planned.get(f, 0)),
        ]
        for f in fields
    ]
    source = "the webhook's <code>pod_tailor_dry_run_*</code> counters, from Prometheus"
    if seen.error is not None:
        note = f'<p class="muted">Dry-run counts unavailable: {escape(seen.error)}</p>'
    elif namespace not in seen.pods:
        note = (
            f'<p class="muted">No dry-run Pod of this namespace recorded over the last {escape(seen.window)} '
            f"({source}).</p>"
        )
    else:
        note = (
            f'<p class="muted">{seen.pods[namespace]} Pod(s) created in dry-run mode over the last '
            f"{escape(seen.window)} ({source}).</p>"
        )
    headers = ["field", f"would have been set, last {seen.window}", "would be set now (workloads)"]
    return (
        "<h2>Dry-run: what pod-tailor would have set</h2>"
        + note
        + table(headers, rows, numeric=(1, 2), css="dry-run")
    )


def namespace_page(
    fleet: Fleet, namespace: str, *, sort: str = "name", order: str = "asc", error: str | None = None
) -> str:
    report = fleet.report
    key = SORTS.get(sort, SORTS["name"])
    workloads = sorted(fleet.by_namespace.get(namespace, ()), key=key, reverse=order == "desc")  # type: ignore[arg-type]
    mode, policy = report.modes.get(namespace, "off"), report.policies.get(namespace, "default")
    totals = report.namespaces.get(namespace)
    body = (
        f'<h1>{escape(namespace)} <span class="tag {escape(mode)}">{escape(mode)}</span></h1>'
        f'<p class="sub">policy {escape(policy)}; profiles: '
        f"{'built ' + _age(report.profiles_at, time.time()) if namespace in fleet.profiled else 'none'}</p>"
        + (summary_cards(totals) if totals else "")
        + _dry_run_panel(fleet, namespace, workloads)
        + "<h2>Workloads</h2>"
        + workload_rows(workloads, link=workload_href, headers=_headers(namespace, sort, order))
    )
    return document(f"{namespace} - pod-tailor", body, nav=_nav((namespace, namespace_href(namespace))))


def workload_page(fleet: Fleet, workload: WorkloadReport) -> str:
    w = workload
    facts = [
        f"{w.replicas} Pod(s)",
        "changes" if w.changed else "no changes",
        f"mode {w.mode}" + (" (as if opted in)" if w.assumed else ""),
        f"policy {w.policy}",
        f"profiles looked up as {w.profile_key}",
    ]
    pod = ""
    if w.pod_adds:
        rows = [
            [
                f"<code>{escape(a.field)}</code>",
                f'<span class="changed">{escape(a.value)}</span>',
                escape(a.source),
            ]
            for a in w.pod_adds
        ]
        pod = "<h2>Pod</h2>" + table(["field", "with pod-tailor", "why"], rows, css="pod")
    notes = "".join(f"<li>{escape(n)}</li>" for n in w.warnings)
    body = (
        f"<h1>{escape(w.kind)}/{escape(w.name)}</h1><p class=sub>{escape('; '.join(facts))}</p>"
        + (f'<div class="problems">Left alone: {escape(w.skipped)}</div>' if w.skipped else "")
        + (f"<ul class=warnings>{notes}</ul>" if notes else "")
        + pod
        + "<h2>Containers</h2>"
        + "".join(container_detail(w, c) for c in w.containers)
    )
    crumbs = ((w.namespace, namespace_href(w.namespace)), (f"{w.kind}/{w.name}", workload_href(w)))
    return document(f"{w.kind}/{w.name} - pod-tailor", body, nav=_nav(*crumbs))


def not_found(what: str) -> str:
    return document("not found - pod-tailor", f"<h1>Not found</h1><p>{escape(what)}</p>", nav=_nav())


def loading(error: str | None, *, retry_seconds: float) -> str:
    """Before the first read: a moment's wait, or why the cluster could not be read and what to check.
    The page reloads itself each time the dashboard reads again."""
    again = f"{retry_seconds:g} s"
    if error is None:
        title, text = "Loading", f"Reading the cluster; a moment (this page reloads every {again})."
    else:
        title = "Cannot read the cluster"
        text = (
            f"{escape(error)}<br>Check that the API server is reachable from here with these credentials "
            "(<code>kubectl get namespaces</code> with the same kubeconfig), or start the dashboard with "
            f"<code>-f DIR</code> to show manifests instead. Trying again every {again}; this page reloads."
        )
    refresh = f'<meta http-equiv="refresh" content="{max(1, round(retry_seconds))}">'
    body = f'{refresh}<h1>{title}</h1><p class="sub loading">{text}</p>'
    return document(f"{title.lower()} - pod-tailor", body, nav=_nav())
