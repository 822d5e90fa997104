"""`pod-tailor report` against a cluster: the shared fake API server, answering as a 1.33 server does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubefake import FakeKube

from tests.report.fleet import container, namespace, resources, workload
from webhook.commands import main

Obj = dict[str, Any]


def owned(obj: Obj, kind: str, name: str) -> Obj:
    obj.setdefault("metadata", {})["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": "u-" + name, "controller": True}
    ]
    return obj


def pod(name: str, ns: str, *, phase: str = "Running", owner: tuple[str, str] | None = None) -> Obj:
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"containers": [container("main", port=8080)]},
        "status": {"phase": phase},
    }
    return owned(obj, *owner) if owner else obj


@pytest.fixture
def cluster(kube: FakeKube, tmp_path: Path) -> Path:
    """Namespaces in each mode, a workload of every kind, and what must not be reported."""
    for ns in (
        namespace("shop", "enforce"),
        namespace("trial", "dry-run"),
        namespace("idle"),
        namespace("kube-system", "enforce"),
        namespace("pod-tailor"),
    ):
        kube.put(ns)
    kube.put(workload("Deployment", "web", container("app", port=80), replicas=2))
    kube.put(workload("StatefulSet", "db", container("pg", port=5432)))
    kube.put(workload("DaemonSet", "agent", container("agent"), status={"desiredNumberScheduled": 3}))
    kube.put(workload("ReplicaSet", "bare-rs", container("app", port=80)))
    kube.put(owned(workload("ReplicaSet", "web-6d8f7c9b4", container("app", port=80)), "Deployment", "web"))
    kube.put(workload("Job", "migrate", container("job")))
    kube.put(owned(workload("Job", "nightly-28000000", container("job")), "CronJob", "nightly"))
    kube.put(
        workload(
            "Job", "done", container("job"), status={"conditions": [{"type": "Complete", "status": "True"}]}
        )
    )
    kube.put(workload("CronJob", "nightly", container("job")))
    kube.put(pod("debug", "shop"))
    kube.put(pod("finished", "shop", phase="Succeeded"))
    kube.put(pod("web-6d8f7c9b4-x2x9q", "shop", owner=("ReplicaSet", "web-6d8f7c9b4")))
    for index in range(3):
        kube.put(pod(f"legacy-{index}abcd", "shop", owner=("ReplicationController", "legacy")))
    kube.put(workload("Deployment", "api", container("app", port=8080), namespace="trial"))
    kube.put(workload("Deployment", "batchy", container("app"), namespace="idle"))
    kube.put(workload("Deployment", "dns", container("dns", port=53), namespace="kube-system"))
    return kube.write_kubeconfig(tmp_path / "kubeconfig")


def report(capsys: pytest.CaptureFixture[str], kubeconfig: Path, *args: str) -> tuple[int, Obj | None, str]:
    code = main(["report", "--kubeconfig", str(kubeconfig), "-o", "json", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out else None, err


def keys(document: Obj | None) -> list[str]:
    assert document is not None
    return [f"{w['namespace']}/{w['kind']}/{w['name']}" for w in document["workloads"]]


class TestWhatIsListed:
    def test_every_kind_in_the_opted_in_namespaces_once(
        self, capsys: pytest.CaptureFixture[str], cluster: Path
    ) -> None:
        code, document, err = report(capsys, cluster)
        assert (code, err) == (0, "")
        assert keys(document) == [
            "shop/CronJob/nightly",
            "shop/DaemonSet/agent",
            "shop/Deployment/web",
            "shop/Job/migrate",
            "shop/Pod/debug",
            "shop/ReplicaSet/bare-rs",
            "shop/ReplicationController/legacy",
            "shop/StatefulSet/db",
            "trial/Deployment/api",
        ]
        assert document is not None
        replicas = {w["name"]: w["replicas"] for w in document["workloads"]}
        assert (replicas["web"], replicas["agent"], replicas["legacy"]) == (2, 3, 3)
        assert {w["name"]: w["mode"] for w in document["workloads"]}["api"] == "dry-run"

    def test_all_namespaces_reports_the_rest_as_if_opted_in(
        self, capsys: pytest.CaptureFixture[str], cluster: Path
    ) -> None:
        code, document, _ = report(capsys, cluster, "--all-namespaces")
        assert code == 0
        assert "idle/Deployment/batchy" in keys(document)
        assert not [key for key in keys(document) if key.startswith(("kube-system/", "pod-tailor/"))]
        assert document is not None
        (batchy,) = [w for w in document["workloads"] if w["name"] == "batchy"]
        assert (batchy["mode"], batchy["assumedOptedIn"], batchy["changes"]) == ("off", True, True)

    def test_a_namespace_named_with_n_is_listed_in_that_namespace_only(
        self, capsys: pytest.CaptureFixture[str], cluster: Path, kube: FakeKube
    ) -> None:
        code, document, _ = report(capsys, cluster, "-n", "trial")
        assert (code, keys(document)) == (0, ["trial/Deployment/api"])
        assert kube.requests_to("/namespaces/trial/deployments")
        assert not kube.requests_to("/apis/apps/v1/deployments?")

    def test_argo_rollouts_are_reported_when_the_cluster_serves_them(
        self, capsys: pytest.CaptureFixture[str], cluster: Path, kube: FakeKube
    ) -> None:
        kube.register("/apis/argoproj.io/v1alpha1", "rollouts", "Rollout")
        rollout = workload("Deployment", "canary", container("app", port=80))
        kube.put(rollout | {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout"}, plural="rollouts")
        _, document, err = report(capsys, cluster)
        assert err == ""
        assert document is not None
        (canary,) = [w for w in document["workloads"] if w["kind"] == "Rollout"]
        # Its Pods are owned by a ReplicaSet named like a Deployment's: the engine keys them so.
        assert (canary["name"], canary["profileKey"], canary["changes"]) == (
            "canary",
            "shop/Deployment/canary",
            True,
        )


class TestTheClustersFacts:
    def test_the_policy_configmap_decides_unless_a_policy_file_is_given(
        self, capsys: pytest.CaptureFixture[str], cluster: Path, kube: FakeKube, tmp_path: Path
    ) -> None:
        kube.put(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "pod-tailor-policy", "namespace": "pod-tailor"},
                "data": {
                    "policy.yaml": "policies:\n  default:\n    resources:\n      cpu: {request: 300m}\n"
                },
            }
        )
        _, document, _ = report(capsys, cluster, "-n", "trial")
        assert document is not None
        app = document["workloads"][0]["containers"][0]
        assert app["recommended"]["requests"]["cpu"] == "300m"
        policy = tmp_path / "policy.yaml"
        policy.write_text("policies:\n  default:\n    resources:\n      cpu: {request: 150m}\n")
        _, document, _ = report(capsys, cluster, "-n", "trial", "--policy-file", str(policy))
        assert document is not None
        assert document["workloads"][0]["containers"][0]["recommended"]["requests"]["cpu"] == "150m"

    def test_limitranger_defaults_are_what_the_pods_get_today(
        self, capsys: pytest.CaptureFixture[str], cluster: Path, kube: FakeKube
    ) -> None:
        kube.put(
            {
                "apiVersion": "v1",
                "kind": "LimitRange",
                "metadata": {"name": "defaults", "namespace": "trial"},
                "spec": {
                    "limits": [{"type": "Container", "defaultRequest": {"cpu": "250m", "memory": "64Mi"}}]
                },
            }
        )
        _, document, _ = report(capsys, cluster, "-n", "trial")
        assert document is not None
        app = document["workloads"][0]["containers"][0]
        assert app["current"]["requests"] == {"cpu": "250m", "memory": "64Mi"}
        assert app["sources"]["requests.cpu"]["from"] == "limitrange"


class TestARefusingCluster:
    def test_a_kind_the_cluster_refuses_is_named_and_the_rest_reported(
        self, capsys: pytest.CaptureFixture[str], cluster: Path, kube: FakeKube
    ) -> None:
        kube.fail_next("/apis/apps/v1/deployments", 403)
        code, document, err = report(capsys, cluster)
        assert code == 1  # done, with a kind left out
        assert "cannot list deployments.apps at the cluster scope (403 Forbidden" in err
        assert "shop/StatefulSet/db" in keys(document)
        assert "shop/Deployment/web" not in keys(document)
        assert document is not None
        assert any("deployments.apps" in problem for problem in document["problems"])

    def test_unknown_namespace_labels_without_n_show_nothing_and_say_what_to_do(
        self, capsys: pytest.CaptureFixture[str], cluster: Path, kube: FakeKube
    ) -> None:
        kube.fail_next("/api/v1/namespaces", 403)
        code, document, err = report(capsys, cluster)
        assert (code, document) == (1, None)
        assert "cannot list namespaces (403 Forbidden" in err
        assert "pass -n NAMESPACE or --all-namespaces" in err

    def test_with_n_unknown_labels_are_evaluated_as_enforce(
        self, capsys: pytest.CaptureFixture[str], cluster: Path, kube: FakeKube
    ) -> None:
        kube.fail_next("/api/v1/namespaces", 403)
        code, document, err = report(capsys, cluster, "-n", "idle")
        assert (code, keys(document)) == (1, ["idle/Deployment/batchy"])  # done, the labels not read
        assert "evaluated as enforce" in err

    def test_a_kubeconfig_named_that_is_missing_is_exit_2(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        code, document, err = report(capsys, tmp_path / "missing-kubeconfig")
        assert (code, document) == (2, None)
        assert err == f"pod-tailor report: --kubeconfig {tmp_path / 'missing-kubeconfig'}: no such file\n"

    def test_an_unreachable_api_server_is_exit_3(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        from kubefake import write_kubeconfig

        config = write_kubeconfig(tmp_path / "kubeconfig", server="http://127.0.0.1:9")
        code, _, err = report(capsys, config)
        assert code == 3
        assert "cannot reach the API server at http://127.0.0.1:9" in err


def test_the_table_shows_the_dry_run_mode_and_each_namespace(
    capsys: pytest.CaptureFixture[str], cluster: Path
) -> None:
    code = main(["report", "--kubeconfig", str(cluster)])
    out, _ = capsys.readouterr()
    totals = out.split("\n\n")[1].splitlines()
    assert code == 0
    assert [line.split()[:2] for line in totals[1:3]] == [["shop", "enforce"], ["trial", "dry-run"]]
    assert totals[3].startswith("(all)")


def test_resources_the_author_set_are_kept(
    capsys: pytest.CaptureFixture[str], kube: FakeKube, tmp_path: Path
) -> None:
    kube.put(namespace("shop", "enforce"))
    kube.put(
        workload("Deployment", "set", container("app", resources=resources({"cpu": "1", "memory": "1Gi"})))
    )
    code, document, _ = report(capsys, kube.write_kubeconfig(tmp_path / "kubeconfig"))
    assert code == 0
    assert document is not None
    assert document["workloads"][0]["containers"][0]["sources"]["requests.cpu"] == {"from": "author"}


class TestResizedInPlace:
    def test_the_report_says_which_pods_were_resized_in_place_and_which_wait(
        self, capsys: pytest.CaptureFixture[str], cluster: Path, kube: FakeKube
    ) -> None:
        from webhook.core.resize.history import RESIZED_ANNOTATION, Change, Entry, history_text

        record = history_text(
            (), Entry(1_790_000_000.0, (Change("main", "requests.cpu", "500m", "350m"),), "x")
        )
        for index, pending in ((0, False), (1, True)):
            found = owned(pod(f"web-6d8f7c9b4-r{index}abc", "shop"), "ReplicaSet", "web-6d8f7c9b4")
            found["metadata"]["labels"] = {"pod-template-hash": "6d8f7c9b4"}
            found["metadata"]["annotations"] = {RESIZED_ANNOTATION: record}
            found["status"]["containerStatuses"] = [{"name": "main", "resources": {}}]
            if pending:
                found["status"]["conditions"] = [{"type": "PodResizePending", "status": "True",
                                                  "reason": "Deferred", "message": "cpu"}]  # fmt: skip
            kube.put(found)
        code, document, _ = report(capsys, cluster)
        assert code == 0
        assert document is not None
        assert document["inPlace"] == {
            "shop/Deployment/web": "2 of 3 Pods resized in place, 1 pending (deferred)"
        }
        code = main(["report", "--kubeconfig", str(cluster), "-o", "table"])
        assert (
            "shop/Deployment/web: 2 of 3 Pods resized in place, 1 pending (deferred)"
            in capsys.readouterr().out
        )
