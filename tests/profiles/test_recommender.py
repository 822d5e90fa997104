"""`pod-tailor recommend` as its own process: Prometheus -> ConfigMaps -> every webhook replica's snapshot."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import History
from kubefake import FakeKube

from webhook.cluster.config import discover
from webhook.commands import main
from webhook.core.model.profile import Recommendation
from webhook.core.model.workload import WorkloadKey
from webhook.profiles.kubestore import KubeStore, configmap_name
from webhook.refreshers.profiles import ProfileRefresher
from webhook.refreshers.state import State


def test_the_recommender_writes_configmaps_that_webhook_replicas_load(
    history: History, kube: FakeKube, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = str(kube.write_kubeconfig(tmp_path / "kubeconfig"))
    command = [
        sys.executable, "-m", "webhook", "recommend", "--prometheus-url", history.prometheus.url,
        "--namespace", "shop", "--step", "5m", "--rate-window", "10m", "--interval", "3600",
        "--profiles-store", "kubernetes", "--kubeconfig", kubeconfig, "-q",
    ]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        deadline = time.monotonic() + 60
        while kube.get("configmaps", configmap_name("shop"), namespace="pod-tailor") is None:
            assert child.poll() is None, child.stdout.read() if child.stdout else ""
            assert time.monotonic() < deadline, "no ConfigMap written within 60 s"
            time.sleep(0.2)
    finally:
        child.terminate()
        child.wait(timeout=10)
    logged = child.stdout.read().decode() if child.stdout else ""
    assert "HTTP Request" not in logged  # httpx logs each query at INFO: they buried what recommend says

    found = discover(kubeconfig=kubeconfig)
    assert found.config is not None
    replicas = [State(), State()]
    for state in replicas:
        refresher = ProfileRefresher(KubeStore(found.config.api_client, namespace="pod-tailor"), interval=60)
        assert asyncio.run(refresher.refresh_once(state)) is True
    a, b = (state.profiles.for_workload(WorkloadKey("shop", "Deployment", "checkout")) for state in replicas)
    assert a == b
    assert isinstance(a["app"], Recommendation)

    shown = ["profiles", "show", "shop/checkout", "--profiles-store", "kubernetes", "--kubeconfig",
             kubeconfig]
    assert main(shown) == 0
    out = capsys.readouterr().out
    assert out.startswith("# configmaps -l pod-tailor.io/profiles in namespace pod-tailor")
    assert [line.split()[:2] for line in out.splitlines()[2:]] == [
        ["shop/Deployment/checkout", "app"], ["shop/Deployment/checkout", "envoy"]
    ]


def _holder(kube: FakeKube) -> str:
    lease = kube.get("leases", "pod-tailor-recommender", namespace="pod-tailor")
    return str(lease["spec"]["holderIdentity"]) if lease else ""


def _writes(kube: FakeKube) -> list[str]:
    return [path for method, path in kube.requests if method in ("POST", "PUT") and "/configmaps" in path]


def test_of_two_replicas_with_leader_election_one_builds_and_a_fail_over_adds_no_build(
    history: History, kube: FakeKube, tmp_path: Path
) -> None:
    kubeconfig = str(kube.write_kubeconfig(tmp_path / "kubeconfig"))
    command = [
        sys.executable, "-m", "webhook", "recommend", "--prometheus-url", history.prometheus.url,
        "--namespace", "shop", "--step", "5m", "--rate-window", "10m", "--interval", "3600",
        "--profiles-store", "kubernetes", "--kubeconfig", kubeconfig, "--leader-elect", "--no-checkpoint",
        "-q",
    ]
    replicas = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         env=dict(os.environ, POD_NAME=f"recommender-{i}"))
        for i in range(2)
    ]  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while not _writes(kube):
            assert all(child.poll() is None for child in replicas)
            assert time.monotonic() < deadline, "no ConfigMap written within 90 s"
            time.sleep(0.2)
        time.sleep(3)  # time for a second writer to show itself, were there one
        assert len(_writes(kube)) == 1
        (leader,) = [i for i in range(2) if _holder(kube).startswith(f"recommender-{i}_")]
        replicas[leader].terminate()  # SIGTERM: the Lease is given up, the other takes it at once
        replicas[leader].wait(timeout=20)
        deadline = time.monotonic() + 15
        while not _holder(kube).startswith(f"recommender-{1 - leader}_"):
            assert time.monotonic() < deadline, "the other replica did not take the Lease over"
            time.sleep(0.2)
        time.sleep(2)
        assert len(_writes(kube)) == 1  # the store is an hour from due: the new leader waits
    finally:
        for child in replicas:
            child.terminate()
            child.wait(timeout=20)
