"""Totals on a small known fleet: what is reserved now and after, and what is missing, per namespace."""

from __future__ import annotations

from decimal import Decimal

import pytest
import yaml

from tests.report.fleet import container, resources, workload
from webhook.config.policies import bundled_policies
from webhook.core.model.quantity import parse
from webhook.core.snapshot import EMPTY_PROFILES, ClusterSnapshot
from webhook.report.collect import from_manifests
from webhook.report.model import Report, Totals
from webhook.report.pipeline import build_report

FLEET = [
    # 3 replicas, nothing set: the policy's 100m/256Mi, probes, preStop and a grace period.
    workload("Deployment", "web", container("app", port=80), replicas=3),
    # 2 replicas, requests and a readiness probe set by the author: preStop and a grace period only (no
    # limit from the author's requests alone, no startup probe without liveness).
    workload(
        "StatefulSet",
        "db",
        container(
            "pg",
            port=5432,
            resources=resources({"cpu": "500m", "memory": "1Gi"}),
            readinessProbe={"tcpSocket": {"port": 5432}},
        ),
        replicas=2,
    ),
    # A batch container with the author's requests: no probes, no preStop, no limit without history.
    workload(
        "CronJob",
        "nightly",
        container("job", resources=resources({"cpu": "1", "memory": "512Mi"})),
        namespace="batch",
    ),
    # Limits only: the API server makes them the requests, so nothing is missing and nothing changes.
    workload(
        "DaemonSet",
        "agent",
        container("agent", resources=resources(limits={"cpu": "200m", "memory": "128Mi"})),
        status={"desiredNumberScheduled": 4},
    ),
]


def _report() -> Report:
    text = yaml.safe_dump_all(FLEET)
    items = from_manifests(text, origin="fleet.yaml")
    cluster = ClusterSnapshot(policies=bundled_policies())
    return build_report(items, cluster=cluster, profiles=EMPTY_PROFILES, source="test", now=0.0)


def _cores(text: str) -> Decimal:
    return parse(text)


@pytest.fixture(scope="module")
def report() -> Report:
    return _report()


class TestTotalsOfAKnownFleet:
    @pytest.mark.parametrize(
        (
            "where",
            "workloads",
            "changed",
            "pods",
            "cpu",
            "memory",
            "no_requests",
            "serving",
            "no_ready",
            "no_stop",
        ),
        [
            ("shop", 3, 2, 9, ("1.8", "2.1"), ("2Gi+512Mi", "2Gi+512Mi+768Mi"), (1, 0), 2, (1, 0), (2, 0)),
            ("batch", 1, 0, 1, ("1", "1"), ("512Mi", "512Mi"), (0, 0), 0, (0, 0), (0, 0)),
            ("cluster", 4, 2, 10, ("2.8", "3.1"), ("3Gi", "3Gi+768Mi"), (1, 0), 2, (1, 0), (2, 0)),
        ],
    )
    def test_requests_and_gaps_now_and_after(
        self,
        report: Report,
        where: str,
        workloads: int,
        changed: int,
        pods: int,
        cpu: tuple[str, str],
        memory: tuple[str, str],
        no_requests: tuple[int, int],
        serving: int,
        no_ready: tuple[int, int],
        no_stop: tuple[int, int],
    ) -> None:
        totals: Totals = report.cluster if where == "cluster" else report.namespaces[where]
        assert (totals.workloads, totals.changed, totals.pods) == (workloads, changed, pods)
        assert (totals.requests_now["cpu"], totals.requests_after["cpu"]) == tuple(map(_cores, cpu))
        assert (totals.requests_now["memory"], totals.requests_after["memory"]) == tuple(
            sum((parse(part) for part in text.split("+")), Decimal(0)) for text in memory
        )
        assert totals.without_requests == no_requests
        assert (totals.serving, totals.without_readiness, totals.without_pre_stop) == (
            serving,
            no_ready,
            no_stop,
        )

    def test_limits_are_summed_per_running_pod(self, report: Report) -> None:
        # agent 4 x 128Mi before and after: web's requests are the policy's guess and db's the author's
        # without history, so no limit is derived from either.
        assert report.namespaces["shop"].limits_after["memory"] == parse("512Mi")
        assert report.namespaces["shop"].limits_now["memory"] == parse("512Mi")

    def test_every_recommended_value_is_counted_by_origin(self, report: Report) -> None:
        # requests: web 2 policy, db 2 author, nightly 2 author, agent 2 author (= limits);
        # limits: agent's two by the author; none derived (no history behind any request).
        assert report.cluster.origins == {"policy": 2, "author": 8}

    def test_a_workload_whose_limits_become_its_requests_does_not_change(self, report: Report) -> None:
        (agent,) = [w for w in report.workloads if w.name == "agent"]
        assert not agent.changed
        (body,) = agent.containers
        assert body.sources["requests.cpu"].detail.startswith("= the limit")
