"""The dashboard agrees with `preview` on every workload of ../shared/corpus, read from a cluster.

Every corpus manifest goes into the fake API server (each file in its own opted-in namespace); the
dashboard lists and evaluates them as it does a real cluster. What it says each workload gets is what
`preview` says for the same manifest, but for the requests the API server copies from limits.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from kubefake import FakeKube

from tests.report.agreement import preview_says, report_says
from tests.report.fleet import namespace
from tests.shared import manifest_files, needs_shared
from webhook.config.policies import bundled_policies
from webhook.core.snapshot import EMPTY_PROFILES, ClusterSnapshot
from webhook.dashboard.fleet import FleetConfig, load_fleet
from webhook.offline.preview import run_preview
from webhook.offline.sources import SourceError, load_documents
from webhook.profiles.store import FileStore

pytestmark = needs_shared
# The group version each kind is served as today (old manifests say extensions/v1beta1, batch/v1beta1).
SERVED = {
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "ReplicaSet": "apps/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
    "Pod": "v1",
}
# The traffic path's objects go into the cluster too, so the pause is sized from the same Services.
AROUND = {"Service": "v1", "Ingress": "networking.k8s.io/v1", "IngressClass": "networking.k8s.io/v1"}


def test_every_corpus_workload_reads_the_same_on_the_dashboard_as_in_preview(tmp_path: Path) -> None:
    # traffic={}: the preview knows the cluster's Services (none but the manifest's), as the dashboard does.
    cluster = ClusterSnapshot(policies=bundled_policies(), server_version=(1, 30), traffic={})
    expected: dict[tuple[str, str, str], set[tuple[str, str, str, str]]] = {}
    with FakeKube() as kube:
        for index, path in enumerate(manifest_files()):
            ns = f"corpus-{index}"
            try:
                found = run_preview(path.read_text(), cluster=cluster, profiles=EMPTY_PROFILES, namespace=ns)
            except SourceError:
                continue
            kube.put(namespace(ns, "enforce"))
            for around in _around(path, ns):
                kube.put(around)
            for previewed in found:
                document: dict[str, Any] = copy.deepcopy(previewed.source.document)
                name = (document.get("metadata") or {}).get("name")
                if document.get("kind") not in SERVED or not name:
                    continue  # the fake serves no ReplicationControllers; an object needs a name
                document["metadata"]["namespace"] = ns
                document["apiVersion"] = SERVED[str(document["kind"])]
                kube.put(document)
                expected[(ns, str(document["kind"]), str(name))] = preview_says(previewed.decision)
        kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
        fleet = load_fleet(FleetConfig(store=FileStore(tmp_path / "none.json"), kubeconfig=str(kubeconfig)))
    assert fleet.report.problems == ()
    assert len(expected) > 100
    assert set(fleet.index) == set(expected)
    for key, said in expected.items():
        assert report_says(fleet.index[key]) == said, key


def _around(path: Path, ns: str) -> list[dict[str, Any]]:
    """The manifest's Services, Ingresses and IngressClasses as they land in namespace `ns`."""
    found = []
    for document in load_documents(path.read_text()):
        kind = document.get("kind")
        if kind not in AROUND or not (document.get("metadata") or {}).get("name"):
            continue
        placed = copy.deepcopy(document)
        placed["apiVersion"] = AROUND[str(kind)]
        if kind != "IngressClass":
            placed["metadata"]["namespace"] = ns
        found.append(placed)
    return found
