"""Which containers get probes and a preStop pause, and when a startup probe is added (issue 26, item 1).

Each case is decided by the real HTTPS server on the Pod the API server creates and by the offline
preview on the manifests; `both` asserts the two answers are the same.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.kit import both, box, svc, workload
from tests.server.conftest import RunningServer

BACKUP = box("backup", image="example/backup-streamer:2", ports=({"name": "stream", "containerPort": 3307},))
READY_8080: dict[str, Any] = {"readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 5}}

# (id, documents, container -> (gets readiness, gets preStop))
CASES: list[tuple[str, list[dict[str, Any]], dict[str, tuple[bool, bool]]]] = [
    ("Deployment without a Service: every container with a TCP port",
     [workload("Deployment", box(), box("side", ports=(9000,)))],
     {"app": (True, True), "side": (True, True)}),
    ("Deployment behind a numeric targetPort: only the container declaring it",
     [workload("Deployment", box(), box("side", ports=(9000,))), svc()],
     {"app": (True, True), "side": (False, False)}),
    ("named targetPort: the container whose port has that name",
     [workload("Deployment", box(ports=({"name": "http", "containerPort": 8080},)),
               box("side", ports=({"name": "admin", "containerPort": 9000},))), svc(ports=((80, "http"),))],
     {"app": (True, True), "side": (False, False)}),
    ("undeclared port matching the author's readiness probe: preStop for it",
     [workload("Deployment", box(ports=(), **READY_8080), box("side", ports=(9000,))), svc()],
     {"app": (True, True), "side": (False, False)}),
    ("undeclared port, the Pod's only container: it serves",
     [workload("Deployment", box(ports=())), svc()],
     {"app": (True, True)}),
    ("StatefulSet: the backup sidecar's stream port gets no TCP probe",
     [workload("StatefulSet", box("mysql", image="mysql:8.0", ports=(3306,)), BACKUP, claims=("data",)),
      svc(ports=((3306, 3306),))],
     {"mysql": (True, True), "backup": (False, False)}),
    ("a Service whose targetPort no container declares, two containers: none serves",
     [workload("Deployment", box(), box("side", ports=(9000,))), svc(ports=((80, 7070),))],
     {"app": (False, False), "side": (False, False)}),
]


@pytest.mark.parametrize(("documents", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_only_containers_a_service_sends_to_get_probes_and_a_pre_stop(
    server: RunningServer, documents: list[dict[str, Any]], expected: dict[str, tuple[bool, bool]]
) -> None:
    decided = both(server, *documents)
    for name, (readiness, pre_stop) in expected.items():
        body = decided.container(name)
        assert ("readinessProbe" in body) is readiness, name
        assert ("lifecycle" in body and "preStop" in body["lifecycle"]) is pre_stop, name


def test_an_undeclared_served_port_is_probed_where_the_service_sends(server: RunningServer) -> None:
    """The probe goes where traffic goes even when `ports` does not declare it."""
    decided = both(server, workload("Deployment", box(ports=())), svc())
    assert decided.container("app")["readinessProbe"]["tcpSocket"] == {"port": 8080}


@pytest.mark.parametrize(
    ("container", "startup"),
    [
        pytest.param(box(), False, id="no liveness: no startup probe"),
        pytest.param(box(livenessProbe={"httpGet": {"path": "/live", "port": 8080}}), True,
                     id="the author's liveness: a startup probe beside it"),
    ],
)
def test_a_startup_probe_only_beside_a_liveness_probe(
    server: RunningServer, container: dict[str, Any], startup: bool
) -> None:
    decided = both(server, workload("Deployment", container), svc())
    assert ("startupProbe" in decided.container("app")) is startup


def test_init_containers_and_native_sidecars_get_no_probes_behind_a_service(server: RunningServer) -> None:
    native = box("proxy", ports=(15001,), restartPolicy="Always")
    init = box("migrate", ports=())
    decided = both(server, workload("Deployment", box(), init=(init, native)), svc())
    for name in ("migrate", "proxy"):
        body = decided.container(name, "initContainers")
        assert "readinessProbe" not in body
        assert "lifecycle" not in body
    assert "readinessProbe" in decided.container("app")
