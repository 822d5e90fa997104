"""A report on manifests instead of a cluster: files, directories and stdin, read as `report -f` and
`dashboard -f` read them (the bundled or given policy, the objects beside the workloads as facts)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from webhook.core.policy.policies import PolicySet
from webhook.core.snapshot import ClusterSnapshot
from webhook.offline.facts import with_manifest_facts
from webhook.report.collect import read_manifests
from webhook.report.model import Report
from webhook.report.pipeline import build_report
from webhook.report.progress import Progress
from webhook.report.usage import Usage

__all__ = ["manifests_report"]


def manifests_report(
    paths: Sequence[str],
    *,
    policies: PolicySet,
    usage: Usage,
    namespaces: Sequence[str] = (),
    stdin: str | None = None,
    server_version: tuple[int, int] | None = None,
    progress: Progress | None = None,
    recursive: bool = False,
) -> Report:
    """Every workload in `paths` (`-` is `stdin`; a directory's manifests, with `recursive` its
    subdirectories' too, as kubectl -R); with one of `namespaces`, objects without a namespace land
    there; with several, only theirs are reported. Services and autoscalers of every file count."""
    namespace = namespaces[0] if len(namespaces) == 1 else None
    items, problems, documents = read_manifests(paths, stdin=stdin, namespace=namespace, recursive=recursive)
    if namespaces and namespace is None:
        items = [item for item in items if item.namespace in namespaces]
    cluster = ClusterSnapshot(
        policies=policies, server_version=server_version, taken_at=time.time(), source="manifests"
    )
    cluster = with_manifest_facts(cluster, documents, namespace=namespace)
    return build_report(
        items,
        cluster=cluster,
        profiles=usage.snapshot,
        summaries=usage.summaries,
        progress=progress,
        source="manifests " + ", ".join(paths),
        problems=[*problems, *([usage.problem] if usage.problem else [])],
    )
