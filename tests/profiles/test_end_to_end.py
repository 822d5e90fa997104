"""Prometheus -> store -> refresher -> engine: the injected annotation says the value came from history."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import jsonpatch
from conftest import History, test_settings

from webhook.config.policies import bundled_policies
from webhook.core.engine import decide
from webhook.core.model.pod import INJECTED_ANNOTATION
from webhook.core.model.profile import Recommendation
from webhook.core.model.quantity import render_bytes, render_cpu
from webhook.core.model.workload import WorkloadKey
from webhook.core.snapshot import ClusterSnapshot
from webhook.profiles.build import BuildResult, build_profiles
from webhook.profiles.prometheus import Prometheus
from webhook.profiles.store import FileStore, load_snapshot
from webhook.refreshers.profiles import ProfileRefresher
from webhook.refreshers.state import State


def _new_pod(
    name: str, owner_kind: str, owner_name: str, rs_hash: str | None = None, *, main: str = "app"
) -> dict[str, Any]:
    """A Pod at CREATE as a controller submits it: generateName, ownerReferences, no resources."""
    labels = {"app": name} | ({"pod-template-hash": rs_hash} if rs_hash else {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"{owner_name}-",
            "namespace": "shop",
            "labels": labels,
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": owner_kind, "name": owner_name, "uid": "1",
                 "controller": True, "blockOwnerDeletion": True}
            ],
        },
        "spec": {
            "containers": [
                {"name": main, "image": "shop/app:1", "ports": [{"containerPort": 8080}]},
                {"name": "envoy", "image": "envoy:1.30"},
            ]
        },
    }


def _patched(pod: dict[str, Any], ops: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    """The Pod as the API server stores it after applying the webhook's JSON Patch."""
    patched: dict[str, Any] = jsonpatch.apply_patch(pod, list(ops))
    return patched


def test_a_new_pod_of_a_rolled_out_deployment_gets_its_history_sized_requests(
    built: BuildResult, tmp_path: Path
) -> None:
    FileStore(tmp_path / "p.json").write(built.document)
    snapshot = load_snapshot(tmp_path / "p.json")
    cluster = ClusterSnapshot(policies=bundled_policies())
    # A ReplicaSet hash never seen in Prometheus: the Deployment's history still applies.
    pod = _new_pod("checkout", "ReplicaSet", "checkout-6b5c9d7f8", "6b5c9d7f8")
    _, decision = decide(pod, namespace="shop", cluster=cluster, profiles=snapshot)

    profile = built.document.workloads[WorkloadKey("shop", "Deployment", "checkout")].containers["app"]
    assert isinstance(profile, Recommendation)
    stored = _patched(pod, decision.ops)
    assert stored["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": render_cpu(profile.cpu), "memory": render_bytes(profile.memory)
    }
    annotation = stored["metadata"]["annotations"][INJECTED_ANNOTATION]
    assert "workload=shop/Deployment/checkout" in annotation
    assert "requests.cpu=" in annotation
    assert "profile: p95 usage over 14d" in annotation
    assert "profile: peak +15% over 14d" in annotation


def test_a_brand_new_workload_falls_back_to_the_policy_and_says_why(
    built: BuildResult, tmp_path: Path
) -> None:
    FileStore(tmp_path / "p.json").write(built.document)
    pod = _new_pod("fresh", "ReplicaSet", "fresh-7f6d5c9b8", "7f6d5c9b8")
    _, decision = decide(
        pod, namespace="shop", cluster=ClusterSnapshot(policies=bundled_policies()),
        profiles=load_snapshot(tmp_path / "p.json"),
    )
    annotation = "\n".join(i.describe() for i in decision.injections if i.target == "app")
    assert 'from policy "default"; no profile: only ' in annotation
    assert "h and 24 samples of history (needs 24h and 100)" in annotation


def test_the_refresher_swaps_fresh_profiles_into_the_state_the_admission_path_reads(
    history: History, tmp_path: Path
) -> None:
    import scenarios

    store = FileStore(tmp_path / "p.json")

    def build() -> Any:
        prom = Prometheus(history.prometheus.url)
        try:
            return build_profiles(prom, test_settings(namespaces=("shop",)), end=scenarios.END).document
        finally:
            prom.close()

    state = State()
    refresher = ProfileRefresher(store, interval=3600, builder=build)
    assert asyncio.run(refresher.refresh_once(state)) is True
    assert state.profiles.taken_at == scenarios.END
    key = WorkloadKey("shop", "CronJob", "nightly")
    assert isinstance(state.profiles.for_workload(key)["job"], Recommendation)
    pod = _new_pod("nightly", "Job", "nightly-29000000", main="job")
    _, decision = decide(pod, namespace="shop", cluster=state.cluster, profiles=state.profiles)
    annotation = _patched(pod, decision.ops)["metadata"]["annotations"][INJECTED_ANNOTATION]
    assert "workload=shop/CronJob/nightly" in annotation
    assert "profile: p95 usage over 14d" in annotation
