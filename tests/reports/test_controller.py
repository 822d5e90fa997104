"""The reports controller through the fake API server serving the OpenReports CRD.

Each test reads the fake's mutation log: Reports are applied (server-side, field manager pod-tailor) when
a workload first shows, when its template, profile or policy changes, and at no other time.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubefake import FakeKube

from tests.cluster.helpers import wait_until
from tests.replicas import Replica as ControllerReplica
from tests.replicas import candidates
from tests.report.fleet import container, namespace, recommendation, resources, workload
from webhook.config.settings import Settings
from webhook.controllers.controller_metrics import ReportMetrics
from webhook.controllers.reports import ReportsController
from webhook.core.model.workload import WorkloadKey
from webhook.core.snapshot import ProfileSnapshot

from .kit import assert_valid_report, report_crd

REPORTS = "/apis/openreports.io/v1alpha1/namespaces/shop/reports/"
WEB = WorkloadKey("shop", "Deployment", "web")
TIGHT = """policies:
  default: {}
  tight:
    resources:
      cpu: {request: 50m, min: 10m, max: 1}
"""


def policy_configmap(text: str = "policies:\n  default: {}\n") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "pod-tailor-policy", "namespace": "pod-tailor"},
            "data": {"policy.yaml": text}}  # fmt: skip


class Replica(ControllerReplica):
    """One controller: the cluster refresher the webhook runs, profiles, the controller, in threads."""

    def __init__(self, kubeconfig: Path, *, leading: threading.Event | None = None, **options: Any) -> None:
        super().__init__(kubeconfig, leading=leading, settings=Settings(kubeconfig=str(kubeconfig)),
                         profiles=ProfileSnapshot(profiles={}, taken_at=1.0))  # fmt: skip
        self.metrics = ReportMetrics()
        self.controller = ReportsController(
            self.api, **self.reads(), metrics=self.metrics, tick=0.05, **options
        )
        self.start(self.controller.run)

    def passes(self, count: int = 3) -> None:
        """Wait for `count` more whole passes (each starts after the one running now)."""
        target = self.controller.passes + count + 1
        wait_until(lambda: self.controller.passes >= target, timeout=30, what=f"{count} passes")

    def count(self, outcome: str) -> float:
        return float(self.metrics.writes.labels(outcome)._value.get())


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    with FakeKube(garbage_collection=True) as kube:
        kube.serve_version(1, 33)
        kube.install_crd(report_crd())
        kube.put(namespace("shop", "dry-run"))
        kube.put(namespace("pod-tailor"))
        kube.put(policy_configmap())
        yield kube


@contextlib.contextmanager
def replica(kube: FakeKube, tmp_path: Path, **options: Any) -> Iterator[Replica]:
    running = Replica(kube.write_kubeconfig(tmp_path / f"kubeconfig-{id(options)}"), **options)
    try:
        wait_until(running.controller.synced, timeout=30, what="the watches synced")
        yield running
    finally:
        running.close()


def applies(kube: FakeKube) -> list[str]:
    """The Reports written, in order: server-side applies by pod-tailor, nothing else."""
    out = []
    for method, path, _ in kube.mutations:
        if REPORTS in path:
            assert method in ("PATCH", "DELETE"), (method, path)
            if method == "PATCH":
                assert "fieldManager=pod-tailor" in path
                assert "force=true" in path
            out.append(path.partition("?")[0].removeprefix(REPORTS))
    return out


def stored(kube: FakeKube, name: str = "pod-tailor-deployment-web") -> dict[str, Any]:
    found = kube.get("reports", name, namespace="shop")
    assert found is not None, name
    return found


def web(port: int = 8080, **fields: Any) -> dict[str, Any]:
    return workload("Deployment", "web", container(port=port, **fields))


def result(report: dict[str, Any], rule: str) -> dict[str, Any]:
    (found,) = [r for r in report["results"] if r["rule"] == rule and r["properties"]["container"] == "app"]
    return dict(found)


class TestReportsAreKept:
    def test_each_workload_kind_of_a_dry_run_namespace_gets_one_valid_report_owned_by_it(
        self, fake: FakeKube, tmp_path: Path
    ) -> None:
        for kind in ("Deployment", "StatefulSet", "DaemonSet", "CronJob"):
            fake.put(workload(kind, "web", container(port=8080)))
        fake.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "debug", "namespace": "shop"},
                  "spec": {"containers": [container()]}})  # fmt: skip
        owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-6d", "uid": "x",
                 "controller": True}  # fmt: skip
        owned = {"name": "web-abc", "namespace": "shop", "ownerReferences": [owner]}
        fake.put({"apiVersion": "v1", "kind": "Pod", "metadata": owned,
                  "spec": {"containers": [container()]}})  # fmt: skip
        fake.put(namespace("quiet"))
        fake.put(workload("Deployment", "elsewhere", container(port=8080), namespace="quiet"))
        with replica(fake, tmp_path) as running:
            wait_until(lambda: len(applies(fake)) == 5, timeout=30, what="five reports")
            running.passes()
        names = {"pod-tailor-deployment-web", "pod-tailor-statefulset-web", "pod-tailor-daemonset-web",
                 "pod-tailor-cronjob-web", "pod-tailor-pod-debug"}  # fmt: skip
        assert sorted(applies(fake)) == sorted(names), "once each; not for controlled Pods, other namespaces"
        for name in names:
            report = stored(fake, name)
            kind = report["scope"]["kind"]
            found = fake.get(f"{kind.lower()}s", report["scope"]["name"], namespace="shop")
            assert found is not None
            assert report["metadata"]["ownerReferences"][0]["uid"] == found["metadata"]["uid"]
            assert report["metadata"]["managedFields"][0]["manager"] == "pod-tailor"
            report.pop("status", None)
            assert_valid_report(report)
        assert result(stored(fake), "requests")["result"] == "warn"

    def test_enforce_namespaces_only_when_asked(self, fake: FakeKube, tmp_path: Path) -> None:
        fake.put(namespace("live", "enforce"))
        fake.put(workload("Deployment", "api", container(port=8080), namespace="live"))
        with replica(fake, tmp_path) as running:
            running.passes()
            assert fake.get("reports", "pod-tailor-deployment-api", namespace="live") is None
        with replica(fake, tmp_path, include_enforce=True):
            wait_until(lambda: fake.get("reports", "pod-tailor-deployment-api", namespace="live"),
                       timeout=30, what="the enforce namespace's report")  # fmt: skip
        report = fake.get("reports", "pod-tailor-deployment-api", namespace="live")
        assert report is not None
        assert "adds" in result(report, "probes")["message"]

    def test_nothing_is_rewritten_while_nothing_changes(self, fake: FakeKube, tmp_path: Path) -> None:
        fake.put(web())
        with replica(fake, tmp_path) as running:
            wait_until(lambda: applies(fake), timeout=30, what="the report")
            before = stored(fake)["metadata"]["resourceVersion"]
            fake.put(namespace("other", "dry-run"))  # events that change nothing for this workload
            fake.put({**web(), "status": {"replicas": 2}})
            running.passes(5)
            assert applies(fake) == ["pod-tailor-deployment-web"]
            assert stored(fake)["metadata"]["resourceVersion"] == before
            assert running.controller.writes == 1
            # The gauges with Policy Reporter's labels count the results of the Reports in the cluster.
            warned = running.metrics.results.labels("shop", "pod-tailor", "requests", "warn", "pod-tailor")
            assert warned._value.get() == 1
            summary = stored(fake)["summary"]
            for status in ("pass", "warn", "skip"):
                shown = running.metrics.summary.labels("shop", "pod-tailor", status)._value.get()
                assert shown == summary[status]

    def test_a_template_change_rewrites_the_report(self, fake: FakeKube, tmp_path: Path) -> None:
        fake.put(web())
        with replica(fake, tmp_path) as running:
            wait_until(lambda: applies(fake), timeout=30, what="the report")
            assert result(stored(fake), "requests")["result"] == "warn"
            fake.put(web(resources=resources({"cpu": "200m", "memory": "256Mi"})))
            wait_until(lambda: len(applies(fake)) == 2, timeout=30, what="the rewrite")
            running.passes()
            assert len(applies(fake)) == 2
        assert result(stored(fake), "requests")["properties"]["current"] == "cpu=200m, memory=256Mi"

    def test_a_profile_change_rewrites_the_report(self, fake: FakeKube, tmp_path: Path) -> None:
        fake.put(web())
        with replica(fake, tmp_path) as running:
            wait_until(lambda: applies(fake), timeout=30, what="the report")
            running.state.swap_profiles(ProfileSnapshot({WEB: {"app": recommendation("350m", "600Mi")}}, 2.0))
            running.controller._wake.set()
            wait_until(lambda: len(applies(fake)) == 2, timeout=30, what="the rewrite")
            running.passes()
            assert len(applies(fake)) == 2
        assert result(stored(fake), "requests")["properties"]["recommended"] == "cpu=350m, memory=600Mi"

    def test_a_policy_change_rewrites_the_report(self, fake: FakeKube, tmp_path: Path) -> None:
        fake.put(web())
        with replica(fake, tmp_path) as running:
            wait_until(lambda: applies(fake), timeout=30, what="the report")
            fake.put(policy_configmap(TIGHT))
            fake.put(namespace("shop", "dry-run", policy="tight"))
            wait_until(lambda: len(applies(fake)) == 2, timeout=30, what="the rewrite")
            running.passes()
            assert len(applies(fake)) == 2
        assert "cpu=50m" in result(stored(fake), "requests")["properties"]["recommended"]

    def test_the_report_goes_with_its_workload(self, fake: FakeKube, tmp_path: Path) -> None:
        fake.put(web())
        with replica(fake, tmp_path) as running:
            wait_until(lambda: applies(fake), timeout=30, what="the report")
            fake.delete("deployments", "web", namespace="shop")
            assert fake.get("reports", "pod-tailor-deployment-web", namespace="shop") is None
            running.passes()
            assert applies(fake) == ["pod-tailor-deployment-web"], "the garbage collector's, not ours"

    def test_a_namespace_that_leaves_dry_run_loses_its_reports(self, fake: FakeKube, tmp_path: Path) -> None:
        fake.put(web())
        with replica(fake, tmp_path):
            wait_until(lambda: applies(fake), timeout=30, what="the report")
            fake.put(namespace("shop", "off"))
            wait_until(lambda: fake.get("reports", "pod-tailor-deployment-web", namespace="shop") is None,
                       timeout=30, what="the report deleted")  # fmt: skip


class TestFailures:
    def test_without_the_crd_it_says_so_once_writes_nothing_and_starts_once_installed(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO, logger="pod_tailor.reports")
        with FakeKube(garbage_collection=True) as kube:
            kube.put(namespace("shop", "dry-run"))
            kube.put(web())
            with replica(kube, tmp_path, absent_retry=0.5) as running:
                running.passes(5)
                assert applies(kube) == []
                assert running.controller.installed is False
                assert running.metrics.installed._value.get() == 0
                said = [r for r in caplog.records if "not installed" in r.getMessage()]
                assert len(said) == 1
                kube.install_crd(report_crd())
                wait_until(lambda: applies(kube), timeout=30, what="the report once the CRD is there")
                assert running.metrics.installed._value.get() == 1

    def test_a_409_conflict_is_tried_again_at_the_next_pass(self, fake: FakeKube, tmp_path: Path) -> None:
        fake.put(web())
        fake.fail_next(REPORTS + "pod-tailor-deployment-web", 409)
        with replica(fake, tmp_path) as running:
            wait_until(lambda: running.count("applied") == 1, timeout=30, what="the report")
            assert fake.get("reports", "pod-tailor-deployment-web", namespace="shop") is not None
            assert running.count("conflict") == 1
            running.passes()
            assert running.count("applied") == 1

    def test_a_report_another_manager_applied_is_taken_over(self, fake: FakeKube, tmp_path: Path) -> None:
        fake.put(web())
        with replica(fake, tmp_path) as running:
            wait_until(lambda: applies(fake), timeout=30, what="the report")
            digest = stored(fake)["metadata"]["annotations"]
            fake.put(web(port=9090))
            wait_until(lambda: stored(fake)["metadata"]["annotations"] != digest, timeout=30, what="rewrite")
            assert {e["manager"] for e in stored(fake)["metadata"]["managedFields"]} == {"pod-tailor"}
            running.passes()


class TestLeaderChange:
    def test_a_new_leader_writes_nothing_that_is_current_and_carries_on(
        self, fake: FakeKube, tmp_path: Path
    ) -> None:
        fake.put(web())
        config = tmp_path / "kubeconfig-lease"
        kubeconfig = fake.write_kubeconfig(config)
        contenders = candidates(kubeconfig, "pod-tailor-reports", ("one", "two"), lease_seconds=3,
                                renew_deadline=2.0, retry_period=0.2)  # fmt: skip
        electors = [contender.elector for contender in contenders]
        replicas = []
        with contextlib.ExitStack() as stack:
            for contender in contenders:
                replicas.append(stack.enter_context(replica(fake, tmp_path, leading=contender.leading)))
                contender.elector.start()
                wait_until(lambda: any(e.is_leader for e in electors), timeout=30, what="a leader")
            first = next(i for i, e in enumerate(electors) if e.is_leader)
            other = 1 - first
            wait_until(lambda: applies(fake), timeout=30, what="the report")
            replicas[first].passes()
            assert replicas[other].controller.passes == 0, "the follower makes no pass"
            assert replicas[other].controller.writes == 0
            electors[first].stop()
            wait_until(lambda: electors[other].is_leader, timeout=30, what="the take-over")
            replicas[other].passes(5)
            assert applies(fake) == ["pod-tailor-deployment-web"], "current: not written again"
            fake.put(web(port=9090))
            wait_until(lambda: len(applies(fake)) == 2, timeout=30, what="the new leader's write")
            wait_until(lambda: replicas[other].controller.writes == 1, timeout=30, what="counted")
            replicas[other].passes()
            assert len(applies(fake)) == 2
            electors[other].stop()


def test_the_result_gauges_use_policy_reporters_label_names() -> None:
    """policy_report_result and policy_report_summary label results so; dashboards carry over."""
    metrics = ReportMetrics()
    assert set(metrics.results._labelnames) <= {"namespace", "policy", "rule", "status", "source", "kind",
                                               "name", "severity", "category", "report"}  # fmt: skip
    assert {"policy", "rule", "status", "source"} <= set(metrics.results._labelnames)
    assert set(metrics.summary._labelnames) == {"namespace", "source", "status"}
