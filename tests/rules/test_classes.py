"""Workload classes (issue 26, item 3): each decision names its class, and the class changes what a
datastore, a node agent, a pause container, a mesh proxy or a Job gets. Every case is decided by the
real HTTPS server and by the preview, with the same answer (`both`)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.kit import both, box, svc, workload
from tests.server.conftest import RunningServer
from webhook.config.policies import load_policy_text
from webhook.core.policy.classes import image_name
from webhook.core.policy.reader import PolicyError

PAUSE_DIGEST = "registry.k8s.io/pause@sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097"


def header(annotation: str) -> str:
    return annotation.splitlines()[0] if annotation else ""


@pytest.mark.parametrize(
    ("image", "name"),
    [
        (PAUSE_DIGEST, "pause"),
        ("registry.k8s.io/pause:3.10", "pause"),
        ("docker.io/library/postgres:16", "postgres"),
        ("postgres", "postgres"),
        ("localhost:5000/team/Redis:7@sha256:abc", "redis"),
        ("bitnami/postgresql:16.2.0", "postgresql"),
    ],
)
def test_an_image_is_known_by_its_name_whatever_the_registry_tag_or_digest(image: str, name: str) -> None:
    assert image_name(image) == name


@pytest.mark.parametrize(
    ("documents", "expected"),
    [
        pytest.param([workload("Deployment", box())], "class=web (default)", id="a plain Deployment: web"),
        pytest.param(
            [workload("StatefulSet", box("db", image="docker.io/library/postgres:16", ports=(5432,)),
                      claims=("data",)), svc(ports=((5432, 5432),))],
            "class=datastore (image postgres)", id="postgres StatefulSet: datastore",
        ),
        pytest.param(
            [workload("StatefulSet", box("store", image="example/blobstore:2.1", ports=(9000,)),
                      claims=("data", "wal")), svc(ports=((9000, 9000),))],
            "class=datastore (volumeClaimTemplates data,wal)",
            id="a StatefulSet with volumeClaimTemplates and an unknown image: datastore",
        ),
        pytest.param(
            [workload("StatefulSet", box("store", image="example/blobstore:2.1", ports=(9000,))),
             svc(ports=((9000, 9000),))],
            "class=web (default)", id="the same StatefulSet without volumeClaimTemplates: web",
        ),
        pytest.param(
            [workload("StatefulSet", box("store", image="example/blobstore:2.1", ports=(9000,)),
                      volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "shared-data"}}]),
             svc(ports=((9000, 9000),))],
            "class=web (default)", id="a StatefulSet sharing one claim of its own: web",
        ),
        pytest.param([workload("Job", box("run", ports=()))], "class=batch (kind Job)", id="a Job: batch"),
        pytest.param([workload("DaemonSet", box("agent", ports=(), resources={"requests": {"cpu": "50m"}}))],
                     "class=node-agent (kind DaemonSet)", id="a DaemonSet: node-agent"),
    ],
)
def test_the_annotation_names_the_class_and_why(
    server: RunningServer, documents: list[dict[str, Any]], expected: str
) -> None:
    decided = both(server, *documents)
    assert f" {expected} " in header(decided.annotation)


class TestDatastore:
    def test_the_grace_period_leaves_a_minute_to_shut_down_cleanly(self, server: RunningServer) -> None:
        decided = both(server, workload("Deployment", box("db", image="mysql:8.0", ports=(3306,))), svc())
        assert decided.pod["spec"]["terminationGracePeriodSeconds"] >= 60
        assert "drain 60s" in decided.annotation

    def test_without_a_port_the_grace_period_still_grows(self, server: RunningServer) -> None:
        decided = both(server, workload("StatefulSet", box("kafka", image="apache/kafka:3.7", ports=())))
        assert decided.pod["spec"]["terminationGracePeriodSeconds"] == 60

    def test_a_statefulset_with_a_volume_per_pod_shuts_down_as_one_whatever_its_image(
        self, server: RunningServer
    ) -> None:
        store = box("store", image="ghcr.io/example/ledger:0.9", ports=(7000,))
        decided = both(server, workload("StatefulSet", store, claims=("data",)), svc(ports=((7000, 7000),)))
        assert decided.pod["spec"]["terminationGracePeriodSeconds"] >= 60
        assert "limits" not in decided.container("store")["resources"]

    def test_no_startup_kill_budget_shorter_than_an_hour_of_recovery(self, server: RunningServer) -> None:
        live = {"livenessProbe": {"tcpSocket": {"port": 6379}, "periodSeconds": 10}}
        decided = both(server, workload("Deployment", box("cache", image="redis:7", ports=(6379,), **live)))
        startup = decided.container("cache")["startupProbe"]
        assert startup["periodSeconds"] * startup["failureThreshold"] >= 3600

    def test_memory_is_not_limited_from_a_guess_even_where_the_policy_allows_it(
        self, server: RunningServer
    ) -> None:
        allows = load_policy_text(
            "policies:\n  default:\n    resources:\n      memory: {limitWithoutHistory: true}"
        )
        web = both(server, workload("Deployment", box()), policies=allows)
        db = both(server, workload("Deployment", box("db", image="mongo:7", ports=(27017,))), policies=allows)
        assert "memory" in web.container("app")["resources"]["limits"]
        assert "limits" not in db.container("db")["resources"]


class TestNodeAgents:
    def test_a_daemonset_no_service_selects_gets_no_probe_and_no_pre_stop(
        self, server: RunningServer
    ) -> None:
        decided = both(server, workload("DaemonSet", box("agent", ports=(9100,))))
        body = decided.container("agent")
        assert "readinessProbe" not in body
        assert "lifecycle" not in body
        assert "requests" in body["resources"]

    def test_a_daemonset_a_service_selects_gets_them(self, server: RunningServer) -> None:
        decided = both(server, workload("DaemonSet", box("agent", ports=(8080,))), svc())
        body = decided.container("agent")
        assert "readinessProbe" in body
        assert "preStop" in body["lifecycle"]

    @pytest.mark.parametrize("priority", ["system-node-critical", "system-cluster-critical"])
    def test_a_system_critical_daemonset_is_left_alone(self, server: RunningServer, priority: str) -> None:
        decided = both(server, workload("DaemonSet", box("cni", ports=()), priorityClassName=priority))
        assert decided.annotation == ""
        assert decided.container("cni").get("resources", {}) == {}

    def test_a_system_critical_deployment_is_not_a_node_agent(self, server: RunningServer) -> None:
        decided = both(server, workload("Deployment", box(), priorityClassName="system-cluster-critical"))
        assert "class=web" in header(decided.annotation)


class TestContainerClasses:
    @pytest.mark.parametrize("image", [PAUSE_DIGEST, "registry.k8s.io/pause:3.10", "k8s.gcr.io/pause:3.2"])
    def test_a_pause_container_gets_the_minimum_requests(self, server: RunningServer, image: str) -> None:
        decided = both(server, workload("DaemonSet", box("pause", image=image, ports=())))
        assert decided.container("pause")["resources"]["requests"] == {"cpu": "10m", "memory": "16Mi"}
        assert "class pause (image pause): minimum requests" in decided.annotation

    @pytest.mark.parametrize("proxy", [
        box("istio-proxy", image="docker.io/istio/proxyv2:1.22", ports=(15090,)),
        box("linkerd-proxy", image="cr.l5d.io/linkerd/proxy:2", ports=(4191,)),
    ])  # fmt: skip
    def test_a_mesh_proxy_is_left_to_the_mesh(self, server: RunningServer, proxy: dict[str, Any]) -> None:
        decided = both(server, workload("Deployment", box(), proxy), svc())
        assert decided.container(proxy["name"]) == proxy
        assert "readinessProbe" in decided.container("app")


def test_a_job_gets_requests_only_even_where_the_policy_derives_limits(server: RunningServer) -> None:
    allows = load_policy_text(
        "policies:\n  default:\n    resources:\n      cpu: {limitWithoutHistory: true, limit: ratio}\n"
        "      memory: {limitWithoutHistory: true}"
    )
    decided = both(server, workload("Job", box("run", ports=())), policies=allows)
    assert set(decided.container("run")["resources"]) == {"requests"}


class TestClassesInThePolicyFile:
    POLICY = (
        "policies:\n"
        "  default:\n"
        "    classes:\n"
        "      legacy:\n"
        "        match: {labels: {tier: legacy}}\n"
        "        overrides: {drainSeconds: 90}\n"
        "      web:\n"
        "        overrides: {preStop: {sleepSeconds: 7}}\n"
    )

    def test_a_class_of_ones_own_is_tried_before_the_bundled_ones(self, server: RunningServer) -> None:
        policies = load_policy_text(self.POLICY)
        decided = both(server, workload("Deployment", box(image="redis:7"), labels={"tier": "legacy"}),
                       policies=policies)  # fmt: skip
        assert " class=legacy (label tier=legacy) " in header(decided.annotation)
        assert decided.pod["spec"]["terminationGracePeriodSeconds"] == 95

    def test_web_overridden_stays_the_class_of_everything_else(self, server: RunningServer) -> None:
        policies = load_policy_text(self.POLICY)
        decided = both(server, workload("Deployment", box()), policies=policies)
        assert decided.container("app")["lifecycle"]["preStop"] == {"sleep": {"seconds": 7}}
        db = both(server, workload("Deployment", box("db", image="postgres:16", ports=(5432,))),
                  policies=policies)  # fmt: skip
        assert "class=datastore" in header(db.annotation)

    def test_a_class_set_to_null_is_gone(self, server: RunningServer) -> None:
        policies = load_policy_text("policies:\n  default:\n    classes:\n      node-agent: null\n")
        decided = both(server, workload("DaemonSet", box("agent", ports=(9100,))), policies=policies)
        assert "readinessProbe" in decided.container("agent")

    @pytest.mark.parametrize(
        ("text", "where"),
        [
            ("policies:\n  default:\n    classes:\n      x:\n        match: {kind: [Job]}\n",
             "policies.default.classes.x.match.kind: unknown field"),
            ("policies:\n  default:\n    classes:\n      x:\n        match: {images: postgres}\n",
             "policies.default.classes.x.match.images: must be a list"),
            ("policies:\n  default:\n    classes:\n      x:\n        overrides: {drainSeconds: -1}\n",
             "policies.default.classes.x.overrides.drainSeconds: must be an integer"),
            ("policies:\n  default:\n    classes:\n      x:\n        scope: node\n",
             "policies.default.classes.x.scope: must be one of pod, container"),
            ("policies:\n  default:\n    classes:\n      x:\n"
             "        match: [{images: [a]}, {volumeClaimTemplates: maybe}]\n",
             "policies.default.classes.x.match.1.volumeClaimTemplates: must be true or false"),
        ],
    )
    def test_a_wrong_class_is_an_error_at_its_line(self, text: str, where: str) -> None:
        with pytest.raises(PolicyError) as raised:
            load_policy_text(text, origin="policy.yaml")
        message = str(raised.value)
        assert message.startswith("policy.yaml:5:")  # the line of the wrong field
        assert where in message
