"""The report agrees with `preview` on every Pod of ../shared/corpus: one engine, read two ways.

Both decide on the Pod as the API server creates it (a container with a limit but no request gets the
request = the limit before any webhook runs), so they agree exactly, requests copied from limits
included.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.report.agreement import patched, preview_decisions, preview_says, report_says, report_warnings
from tests.report.fleet import recommendation
from tests.shared import manifest_files, needs_shared, review_files
from webhook.config.policies import bundled_policies
from webhook.core.model.pod import containers
from webhook.core.model.profile import WorkloadProfiles
from webhook.core.model.workload import WorkloadKey, pod_workload
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot
from webhook.offline.facts import with_manifest_facts
from webhook.offline.sources import PodSource, SourceError, load_documents, pod_sources
from webhook.report.collect import from_manifests, read_manifests
from webhook.report.evaluate import evaluate

pytestmark = needs_shared
CLUSTER = ClusterSnapshot(policies=bundled_policies(), server_version=(1, 31))


def _sources(path: Path) -> list[PodSource]:
    try:
        return pod_sources(load_documents(path.read_text()))
    except SourceError:
        return []


def _profiles(sources: list[PodSource]) -> ProfileSnapshot:
    """A confident profile for every container, so history, start-up and limit rules all show."""
    index: dict[WorkloadKey, WorkloadProfiles] = {}
    for source in sources:
        key = pod_workload(source.pod, source.namespace) if source.is_review else source.workload
        index[key] = {ref.name: recommendation("250m", "300Mi") for ref in containers(source.pod)}
    return ProfileSnapshot(index)


@pytest.mark.parametrize("path", review_files(), ids=lambda p: p.stem)
def test_a_corpus_review_reads_the_same_in_the_report_and_the_preview(path: Path) -> None:
    profiles = _profiles(_sources(path))
    (decision,) = preview_decisions(path, cluster=CLUSTER, profiles=profiles)
    (item,) = from_manifests(path.read_text(), origin=str(path))
    row = evaluate(item, cluster=CLUSTER, profiles=profiles)
    assert report_says(row) == preview_says(decision)
    pod = json.loads(path.read_text())["request"]["object"]
    assert {c.name: c.recommended for c in row.containers} == patched(pod, decision)
    assert report_warnings(row) == report_warnings(row).__class__(decision.warnings)
    assert row.skipped == decision.skipped


MANIFESTS = [path for path in manifest_files() if _sources(path)]


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: "/".join(p.parts[-2:]))
def test_a_corpus_manifest_reads_the_same(path: Path) -> None:
    sources = _sources(path)
    profiles = _profiles(sources)
    decisions = preview_decisions(path, cluster=CLUSTER, profiles=profiles)
    items, problems, documents = read_manifests([str(path)])
    assert not problems
    # The report reads the HPAs and Services beside the workloads, as the preview does.
    cluster = with_manifest_facts(CLUSTER, documents, namespace=None)
    assert len(decisions) == len(items) == len(sources)
    for source, decision, item in zip(sources, decisions, items, strict=True):
        row = evaluate(item, cluster=cluster, profiles=profiles)
        assert report_says(row) == preview_says(decision), source.label
