"""The boost controller against the fake 1.33 API server: every path from Ready to the CPU given back."""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonpatch
import kubernetes_validate
import pytest
from kubefake import FakeKube

from tests.boost.test_admission import BOOST, JVM
from tests.cluster.helpers import wait_until
from tests.engine.podkit import container, pod
from tests.replicas import Replica, candidates
from webhook.controllers.boost import BoostController
from webhook.controllers.controller_metrics import ResizeMetrics
from webhook.core.boost.record import BOOST_ANNOTATION, BOOSTED_LABEL, BoostRecord, SteadyCpu, read_record
from webhook.core.engine import tailor
from webhook.core.facts import ClusterFacts

NOW = 1_790_000_000.0  # the controllers' clock; Pods start 120 s before it


def stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def admitted(
    name: str = "web-1", *, ready_for: float | None = 60.0, values: dict[str, str] | None = None
) -> dict[str, Any]:
    """A Pod as the webhook boosts it and the kubelet runs it: started 120 s ago, Ready `ready_for` s."""
    subject = pod(container(requests=values, limits=values)) if values else pod()
    subject["metadata"].pop("generateName")
    subject["metadata"]["name"] = name
    decision = tailor(subject, policy=BOOST, profiles=JVM, facts=ClusterFacts(server_version=(1, 33)))
    created: dict[str, Any] = jsonpatch.apply_patch(copy.deepcopy(subject), list(decision.ops))
    kubernetes_validate.validate(created, kubernetes_validate.latest_version(), strict=True)
    created["metadata"]["generation"] = 1
    resources = copy.deepcopy(created["spec"]["containers"][0]["resources"])
    created["status"] = {
        "phase": "Running", "startTime": stamp(NOW - 120),
        "containerStatuses": [{"name": "app", "ready": ready_for is not None, "resources": resources}],
        "conditions": [{"type": "Ready", "status": "True" if ready_for is not None else "False",
                        "lastTransitionTime": stamp(NOW - (ready_for or 120))}],
    }  # fmt: skip
    return created


class Running(Replica):
    """One controller in a thread, on its own API client and clock; stopped at exit."""

    def __init__(
        self, kubeconfig: Path, *, clock: list[float], leading: threading.Event | None = None
    ) -> None:
        super().__init__(kubeconfig, leading=leading)
        self.metrics = ResizeMetrics()
        self.controller = BoostController(
            self.api, leading=self.leading, stop=self.stop, metrics=self.metrics, clock=lambda: clock[0],
            tick=0.05,
        )  # fmt: skip
        self.start(self.controller.run)

    def count(self, name: str, *labels: str) -> float:
        metric = getattr(self.metrics, name)
        return float((metric.labels(*labels) if labels else metric)._value.get())


@contextlib.contextmanager
def controller(kubeconfig: Path, clock: list[float], **kwargs: Any) -> Iterator[Running]:
    running = Running(kubeconfig, clock=clock, **kwargs)
    try:
        yield running
    finally:
        running.close()


def stored(kube: FakeKube, name: str = "web-1") -> dict[str, Any]:
    found = kube.get("pods", name, namespace="shop")
    assert found is not None
    return found


def cpu(found: dict[str, Any]) -> tuple[str, str | None]:
    resources = found["spec"]["containers"][0]["resources"]
    return resources["requests"]["cpu"], (resources.get("limits") or {}).get("cpu")


def finished(found: dict[str, Any]) -> str:
    record = read_record(found["metadata"]["annotations"])
    return "" if record is None or BOOSTED_LABEL in found["metadata"].get("labels", {}) else record.outcome


@pytest.fixture
def clock() -> list[float]:
    return [NOW]


class TestGivingTheCpuBack:
    def test_end_to_end_admission_ready_resize_steady_and_the_label_gone(
        self, kube: FakeKube, kubeconfig: Path, clock: list[float]
    ) -> None:
        kube.put(admitted())
        assert cpu(stored(kube)) == ("1400m", None)
        with controller(kubeconfig, clock) as running:
            wait_until(lambda: finished(stored(kube)), what="the CPU given back")
        found = stored(kube)
        assert cpu(found) == ("250m", None)
        assert found["status"]["containerStatuses"][0]["resources"]["requests"]["cpu"] == "250m"
        assert finished(found) == "reverted after 120s"
        assert BOOSTED_LABEL not in found["metadata"]["labels"]
        assert running.count("reverted") == 1
        assert len(kube.requests_to("/resize")) == 1

    def test_a_limit_goes_back_with_the_request_and_the_pod_stays_guaranteed(
        self, kube: FakeKube, kubeconfig: Path, clock: list[float]
    ) -> None:
        kube.put(admitted(values={"cpu": "250m", "memory": "256Mi"}))
        assert cpu(stored(kube)) == ("1400m", "1400m")
        with controller(kubeconfig, clock):
            wait_until(lambda: finished(stored(kube)), what="the CPU given back")
        assert cpu(stored(kube)) == ("250m", "250m")

    def test_a_pod_not_ready_keeps_its_boost_until_the_deadline(
        self, kube: FakeKube, kubeconfig: Path, clock: list[float]
    ) -> None:
        kube.put(admitted(ready_for=None))
        with controller(kubeconfig, clock) as running:
            wait_until(lambda: running.count("boosted") == 1, what="the Pod seen")
            wait_until(lambda: len(kube.requests_to("labelSelector")) >= 1, what="the watch")
            assert cpu(stored(kube)) == ("1400m", None)
            clock[0] = NOW - 120 + 600  # maxSeconds after the start
            wait_until(lambda: finished(stored(kube)), what="the deadline")
        assert cpu(stored(kube)) == ("250m", None)

    def test_ready_but_within_the_extra_seconds_waits(
        self, kube: FakeKube, kubeconfig: Path, clock: list[float]
    ) -> None:
        kube.put(admitted(ready_for=10))
        with controller(kubeconfig, clock) as running:
            wait_until(lambda: running.count("boosted") == 1, what="the Pod seen")
            assert not kube.requests_to("/resize")
            clock[0] += 20
            wait_until(lambda: finished(stored(kube)), what="Ready + 30 s")


class TestWhenTheResizeDoesNotGoThrough:
    def test_a_conflict_is_tried_again(self, kube: FakeKube, kubeconfig: Path, clock: list[float]) -> None:
        kube.put(admitted())
        kube.fail_next("/api/v1/namespaces/shop/pods/web-1/resize", 409)
        with controller(kubeconfig, clock) as running:
            wait_until(lambda: finished(stored(kube)), what="the retry")
        assert len(kube.requests_to("/resize")) == 2
        assert running.count("failures", "error") == 1

    def test_a_pod_gone_meanwhile_is_forgotten(
        self, kube: FakeKube, kubeconfig: Path, clock: list[float]
    ) -> None:
        kube.put(admitted())
        kube.fail_next("/api/v1/namespaces/shop/pods/web-1/resize", 404)
        with controller(kubeconfig, clock) as running:
            wait_until(lambda: kube.requests_to("/resize"), what="the resize")
            kube.delete("pods", "web-1", namespace="shop")
            wait_until(
                lambda: running.count("boosted") == 0 or not running.controller.watched.objects(), what="gone"
            )
        assert running.count("failures", "error") == 0

    def test_a_resize_the_api_server_refuses_is_given_up_and_recorded(
        self, kube: FakeKube, kubeconfig: Path, clock: list[float]
    ) -> None:
        tampered = admitted(values={"cpu": "250m", "memory": "256Mi"})
        record = BoostRecord((SteadyCpu("app", "250m", None, "1400m"),))  # the limit lost: QoS would change
        tampered["metadata"]["annotations"][BOOST_ANNOTATION] = record.dumps()
        kube.put(tampered)
        with controller(kubeconfig, clock) as running:
            wait_until(lambda: finished(stored(kube)), what="given up")
        outcome = finished(stored(kube))
        assert outcome.startswith(
            'failed: resize refused: Pod "web-1" is invalid: spec: Invalid value: "Guaranteed": Pod QOS Class'
        )
        assert cpu(stored(kube)) == ("1400m", "1400m")
        assert running.count("failures", "refused") == 1

    def test_a_resize_rbac_forbids_is_tried_again_until_granted_never_given_up(
        self, kube: FakeKube, kubeconfig: Path, clock: list[float]
    ) -> None:
        kube.put(admitted())
        kube.forbid("pods/resize")  # a ClusterRole without patch on pods/resize
        with controller(kubeconfig, clock) as running:
            wait_until(lambda: running.count("failures", "error") >= 2, what="asked again")
            found = stored(kube)
            assert (finished(found), cpu(found)) == ("", ("1400m", None))
            assert BOOSTED_LABEL in found["metadata"]["labels"]
            kube.forbid("pods/resize", allowed=True)
            wait_until(lambda: finished(stored(kube)), what="the CPU given back once granted")
        assert finished(stored(kube)) == "reverted after 120s"
        assert running.count("failures", "refused") == 0

    def test_an_infeasible_resize_is_given_up(
        self, kube: FakeKube, kubeconfig: Path, clock: list[float]
    ) -> None:
        kube.resize_outcome = "Infeasible"
        kube.put(admitted())
        with controller(kubeconfig, clock) as running:
            wait_until(lambda: finished(stored(kube)), what="given up")
        assert finished(stored(kube)).startswith("failed: Infeasible: Node didn't have enough")
        assert running.count("failures", "infeasible") == 1

    def test_a_deferred_resize_is_waited_for_until_the_kubelet_applies_it(
        self, kube: FakeKube, kubeconfig: Path, clock: list[float]
    ) -> None:
        kube.resize_outcome = "Deferred"
        kube.put(admitted())
        with controller(kubeconfig, clock) as running:
            wait_until(lambda: running.count("deferred") == 1, what="the deferral seen")
            assert BOOSTED_LABEL in stored(kube)["metadata"]["labels"]
            applied = stored(kube)
            applied["status"]["conditions"] = [
                c for c in applied["status"]["conditions"] if c["type"] != "PodResizePending"
            ]
            kube.put(applied)
            wait_until(lambda: finished(stored(kube)), what="the kubelet done")
        assert finished(stored(kube)).startswith("reverted")
        assert len(kube.requests_to("/resize")) == 1


class TestRestartsAndReplicas:
    def test_a_controller_restarted_mid_resize_finishes_the_job(
        self, kube: FakeKube, kubeconfig: Path, clock: list[float]
    ) -> None:
        kube.resize_outcome = "InProgress"
        kube.put(admitted())
        with controller(kubeconfig, clock):
            wait_until(lambda: kube.requests_to("/resize"), what="the resize asked")
        assert not finished(stored(kube))
        in_progress = stored(kube)
        in_progress["status"]["conditions"] = [
            c for c in in_progress["status"]["conditions"] if c["type"] != "PodResizeInProgress"
        ]
        kube.put(in_progress)
        with controller(kubeconfig, clock) as second:
            wait_until(lambda: finished(stored(kube)), what="the second controller")
        assert second.count("reverted") == 1
        assert len(kube.requests_to("/resize")) == 1  # the spec was already steady: nothing asked twice

    def test_of_two_replicas_only_the_leader_resizes(
        self, kube: FakeKube, kubeconfig: Path, clock: list[float]
    ) -> None:
        kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "pod-tailor"}})
        for index in range(3):
            kube.put(admitted(f"web-{index}", ready_for=None))
        contenders = candidates(kubeconfig, "pod-tailor-boost-controller")
        electors = [contender.elector for contender in contenders]
        replicas = [Running(kubeconfig, clock=clock, leading=contender.leading) for contender in contenders]
        try:
            for elector in electors:
                elector.start()
            wait_until(lambda: sum(r.leading.is_set() for r in replicas) == 1, what="one leader")
            (follower,) = [r for r in replicas if not r.leading.is_set()]
            # The follower watches them all the while, ready to take over.
            wait_until(lambda: len(follower.controller.watched.objects()) == 3, what="the follower's watch")
            clock[0] = NOW + 600
            # The count follows the write the test sees, so wait for it rather than read it at once.
            wait_until(lambda: sum(r.count("reverted") for r in replicas) == 3, what="all given back")
            assert all(finished(stored(kube, f"web-{i}")) for i in range(3))
            assert follower.count("reverted") == 0
            assert len(kube.requests_to("/resize")) == 3
        finally:
            for elector in electors:
                elector.stop()
            for replica in replicas:
                replica.close()
