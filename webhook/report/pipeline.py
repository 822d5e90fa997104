"""Collected workloads -> evaluated rows -> one `Report`, against one pair of snapshots."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot
from webhook.report.collect import Collected
from webhook.report.evaluate import Summaries, evaluate, everything_opted_in
from webhook.report.model import Report
from webhook.report.progress import Progress
from webhook.report.totals import assemble

__all__ = ["build_report"]


def build_report(
    items: Sequence[Collected],
    *,
    cluster: ClusterSnapshot,
    profiles: ProfileSnapshot,
    source: str,
    assume_opted_in: bool = False,
    problems: Iterable[str] = (),
    progress: Progress | None = None,
    now: float | None = None,
    summaries: Summaries | None = None,
) -> Report:
    """Evaluate every item (`assume_opted_in`: as if its namespace were labelled enforce)."""
    decide_on = everything_opted_in(cluster) if assume_opted_in else cluster
    rows = []
    for done, item in enumerate(items, start=1):
        rows.append(
            evaluate(item, cluster=cluster, profiles=profiles, decide_on=decide_on, summaries=summaries)
        )
        if progress is not None:
            progress.advance(done, len(items), "workloads evaluated")
    if progress is not None:
        progress.done()
    namespaces = {item.namespace for item in items}
    modes = {ns: cluster.settings_for(ns).mode.value for ns in namespaces}
    policies = {ns: cluster.settings_for(ns).policy for ns in namespaces}
    return assemble(
        rows,
        generated_at=time.time() if now is None else now,
        source=source,
        profiles=profiles.source,
        profiles_at=profiles.taken_at,
        problems=problems,
        modes=modes,
        policies=policies,
    )
