"""The resize controller's right-sizing duty against the fake API server answering as Kubernetes 1.35 does.

Each test reads the mutation log: exactly the expected `pods/resize` patches, the Pod's record and its
events, and nothing else (never a workload, never a template).
"""

from __future__ import annotations

import contextlib
import io
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubefake import FakeKube

from tests.autoscalers.kit import VPA_PREFIX, hpa, utilization, vpa
from tests.cluster.helpers import wait_until
from tests.fit.kit import quota
from tests.replicas import Replica, candidates
from tests.rightsize.kit import NOW, QUIETER, app, container, node, pod, pod_metrics, profiles, running
from webhook.config.settings import Settings
from webhook.controllers.controller_metrics import ResizeMetrics
from webhook.controllers.rightsize import RightsizeController
from webhook.core.model.workload import WorkloadKey
from webhook.core.resize.history import RESIZED_ANNOTATION, Change, Entry, history_text, read_history
from webhook.core.snapshot import ProfileSnapshot

POLICY = """policies:
  rightsize:
    inPlace: {enabled: true}
  nightly:
    inPlace:
      enabled: true
      windows: [{schedule: "0 1 * * *", duration: 4h, timeZone: Europe/Berlin}]
"""
WEB = WorkloadKey("shop", "Deployment", "web")
POD = "web-7d4b9c8f6d-abcde"
RESIZE = f"/api/v1/namespaces/shop/pods/{POD}/resize"


class Controller(Replica):
    """One replica: the cluster refresher the webhook runs, the profiles, and the controller, in threads."""

    def __init__(self, kubeconfig: Path, policy_file: Path, *, clock: list[float], profiles: Any,
                 leading: threading.Event | None = None, per_minute: int = 30) -> None:  # fmt: skip
        settings = Settings(kubeconfig=str(kubeconfig), policy_file=str(policy_file))
        super().__init__(kubeconfig, leading=leading, settings=settings,
                         profiles=ProfileSnapshot(profiles=profiles, taken_at=NOW))  # fmt: skip
        self.metrics = ResizeMetrics()
        self.controller = RightsizeController(
            self.api, **self.reads(), metrics=self.metrics, clock=lambda: clock[0], tick=0.05,
            per_minute=per_minute,
        )  # fmt: skip
        self.start(self.controller.run)

    def count(self, result: str) -> float:
        return float(self.metrics.resizes.labels(result)._value.get())

    def passes(self, count: int = 3) -> None:
        """Let the controller make a few more passes (each tick, or at once after an event)."""
        for _ in range(count):
            done = threading.Event()
            self.controller._wake.set()
            threading.Timer(0.1, done.set).start()
            done.wait()


@pytest.fixture
def cluster(kube: FakeKube, tmp_path: Path) -> tuple[FakeKube, Path, Path]:
    kube.serve_version(1, 35)
    kube.register("/apis/metrics.k8s.io/v1beta1", "pods", "PodMetrics")  # metrics-server
    kube.put({"apiVersion": "v1", "kind": "Namespace",
              "metadata": {"name": "shop", "labels": {"pod-tailor.io/mode": "enforce",
                                                      "pod-tailor.io/policy": "rightsize"}}})  # fmt: skip
    kube.put(node())
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(POLICY, encoding="utf-8")
    return kube, kube.write_kubeconfig(tmp_path / "kubeconfig"), policy_file


@contextlib.contextmanager
def controller(
    cluster: tuple[FakeKube, Path, Path], *, clock: list[float] | None = None,
    now: dict[WorkloadKey, Any] | None = None, **kwargs: Any,
) -> Iterator[Controller]:  # fmt: skip
    _, kubeconfig, policy_file = cluster
    running_ = Controller(
        kubeconfig, policy_file, clock=clock or [NOW], profiles=now or {WEB: QUIETER}, **kwargs
    )
    try:
        wait_until(running_.controller.synced, what="the watches synced")
        yield running_
    finally:
        running_.close()


def writes(kube: FakeKube) -> list[tuple[str, str]]:
    """The mutation log as (method, path), the Pods' own test setup left out."""
    return [(method, path.partition("?")[0]) for method, path, _ in kube.mutations]


def stored(kube: FakeKube, name: str = POD) -> dict[str, Any]:
    found = kube.get("pods", name, namespace="shop")
    assert found is not None
    return found


def resized(name: str = POD) -> list[tuple[str, str]]:
    """The three writes of one resize asked and taken: resize, the record, the event."""
    return [
        ("PATCH", f"/api/v1/namespaces/shop/pods/{name}/resize"),
        ("PATCH", f"/api/v1/namespaces/shop/pods/{name}"),
        ("POST", "/api/v1/namespaces/shop/events"),
    ]


class TestAResize:
    def test_accepted_resizes_the_pod_in_place_records_and_says_it_and_nothing_else(
        self, cluster: Any
    ) -> None:
        kube = cluster[0]
        kube.put(running())
        kube.put(pod_metrics(running(), "90Mi"), plural="pods")
        with controller(cluster) as replica:
            wait_until(lambda: read_history(stored(kube)["metadata"]["annotations"]), what="the record")
            replica.passes()
        assert writes(kube) == resized()
        (_, _, ops), (_, _, record), (_, _, event) = kube.mutations
        assert set(record["metadata"]["annotations"]) == {RESIZED_ANNOTATION}
        assert ops == [
            {"op": "replace", "path": "/spec/containers/0/resources/requests/cpu", "value": "350m"},
            {"op": "replace", "path": "/spec/containers/0/resources/requests/memory", "value": "420Mi"},
            {"op": "replace", "path": "/spec/containers/0/resources/limits/memory", "value": "840Mi"},
        ]
        found = stored(kube)
        assert app(found) == {"requests": {"cpu": "350m", "memory": "420Mi"}, "limits": {"memory": "840Mi"}}
        assert found["status"]["containerStatuses"][0]["resources"] == app(found)  # the kubelet applied it
        (entry,) = read_history(found["metadata"]["annotations"])
        assert (entry.at, entry.result) == (NOW, "asked")
        assert entry.why.startswith("app: requests.cpu 500m -> 350m, requests.memory 600Mi -> 420Mi")
        assert event["reason"] == "ResizedInPlace"
        assert event["involvedObject"]["name"] == POD
        assert event["message"] == entry.why
        assert replica.count("resized") == 1

    def test_infeasible_is_given_back_and_never_asked_again(self, cluster: Any) -> None:
        kube = cluster[0]
        kube.resize_outcome = "Infeasible"
        kube.put(running())
        kube.put(pod_metrics(running(), "90Mi"), plural="pods")
        with controller(cluster) as replica:
            wait_until(lambda: replica.count("infeasible") == 1, what="given back")
            kube.resize_outcome = "done"
            replica.passes()
        assert writes(kube) == resized() * 2
        back = kube.mutations[3][2]
        assert {op["value"] for op in back} == {"500m", "600Mi", "1200Mi"}
        (entry,) = read_history(stored(kube)["metadata"]["annotations"])
        assert entry.result.startswith("infeasible: Node didn't have enough allocatable: cpu; given back")
        assert kube.mutations[5][2]["type"] == "Warning"

    def test_deferred_is_waited_for_and_asked_once(self, cluster: Any) -> None:
        kube = cluster[0]
        kube.resize_outcome = "Deferred"
        kube.put(running())
        kube.put(pod_metrics(running(), "90Mi"), plural="pods")
        with controller(cluster) as replica:
            wait_until(lambda: replica.count("deferred") == 1, what="the deferral seen")
            replica.passes()
        assert writes(kube) == resized()

    def test_a_qos_change_the_api_server_refuses_is_recorded_and_not_asked_again(self, cluster: Any) -> None:
        kube = cluster[0]
        author = {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"memory": "1Gi"}}
        kube.put(running(subject=pod(container(limits=author["limits"], requests=author["requests"]))))
        leading = threading.Event()
        with controller(cluster, leading=leading, now={WEB: profiles("0.7", 1024)}) as replica:
            with kube.lagging():  # someone lowers the cpu limit to 700m; the watch has not told us yet
                current = stored(kube)
                for where in (app(current), current["status"]["containerStatuses"][0]["resources"]):
                    where["limits"]["cpu"] = "700m"
                kube.put(current)
                leading.set()
                wait_until(lambda: replica.count("refused") == 1, what="the refusal")
            replica.passes()
        assert writes(kube) == resized()  # kube.put is the test's own write, not logged
        (entry,) = read_history(stored(kube)["metadata"]["annotations"])
        assert entry.result == (
            f'refused: Pod "{POD}" is invalid: spec: Invalid value: "Burstable": '
            "Pod QOS Class may not change as a result of resizing"
        )
        assert kube.mutations[-1][2]["reason"] == "ResizeRefused"

    def test_a_resize_rbac_forbids_is_an_error_tried_again_never_recorded(self, cluster: Any) -> None:
        kube = cluster[0]
        kube.put(running())
        kube.put(pod_metrics(running(), "90Mi"), plural="pods")
        kube.forbid("pods/resize")  # a ClusterRole without patch on pods/resize
        with controller(cluster) as replica:
            wait_until(lambda: replica.count("error") >= 2, what="asked again")
            assert set(writes(kube)) == {("PATCH", RESIZE)}  # no record, no event
            kube.forbid("pods/resize", allowed=True)
            wait_until(lambda: replica.count("resized") == 1, what="resized once granted")
            replica.passes()
        assert writes(kube)[-3:] == resized()
        assert replica.count("refused") == 0
        (entry,) = read_history(stored(kube)["metadata"]["annotations"])
        assert entry.result == "asked"

    def test_a_resize_over_a_quota_the_watch_has_not_shown_is_tried_again_not_recorded(
        self, cluster: Any
    ) -> None:
        kube = cluster[0]
        kube.put(running())
        leading, more = threading.Event(), {WEB: profiles("0.7", 600)}
        with kube.lagging(), controller(cluster, leading=leading, now=more) as replica:
            kube.put(quota(hard={"requests.cpu": "600m"}, used={"requests.cpu": "500m"}))  # not yet watched
            leading.set()
            wait_until(lambda: replica.count("error") >= 2, what="asked again")
        assert set(writes(kube)) == {("PATCH", RESIZE)}  # no record, no event
        assert kube.mutations[0][2] == [
            {"op": "replace", "path": "/spec/containers/0/resources/requests/cpu", "value": "700m"}
        ]
        assert (replica.count("refused"), replica.count("resized")) == (0, 0)
        assert app(stored(kube))["requests"]["cpu"] == "500m"
        charged = kube.get("resourcequotas", "compute", namespace="shop")
        assert charged is not None
        assert charged["status"]["used"] == {"requests.cpu": "500m"}

    def test_a_pod_deleted_mid_resize_is_forgotten(self, cluster: Any) -> None:
        kube = cluster[0]
        kube.put(running())
        leading = threading.Event()
        with controller(cluster, leading=leading) as replica:
            with kube.lagging():
                kube.delete("pods", POD, namespace="shop")
                leading.set()
                wait_until(lambda: replica.count("gone") == 1, what="the 404")
            replica.passes()
        assert writes(kube) == [("PATCH", RESIZE)]


class TestWatchesAndLeaders:
    def test_after_a_watch_410_nothing_is_asked_twice_and_new_pods_are_seen(self, cluster: Any) -> None:
        kube = cluster[0]
        kube.put(running())
        kube.put(pod_metrics(running(), "90Mi"), plural="pods")
        with controller(cluster) as replica:
            wait_until(lambda: replica.count("resized") == 1, what="the first resize")
            kube.compact()
            kube.expire_watches()
            other = running("web-7d4b9c8f6d-fghij")
            kube.put(other)
            kube.put(pod_metrics(other, "90Mi"), plural="pods")
            wait_until(lambda: replica.count("resized") == 2, what="the new Pod")
            replica.passes()
        assert writes(kube) == resized() + resized("web-7d4b9c8f6d-fghij")

    def test_a_leader_change_mid_pass_resizes_each_pod_once(self, cluster: Any) -> None:
        kube = cluster[0]
        names = [f"web-7d4b9c8f6d-{suffix}" for suffix in ("aaaaa", "bbbbb", "ccccc", "ddddd")]
        for name in names:
            kube.put(running(name))
            kube.put(pod_metrics(running(name), "90Mi"), plural="pods")
        first, second = threading.Event(), threading.Event()
        first.set()
        few = {WEB: QUIETER}
        # maxConcurrentPercent 10 % of 4 Pods: one at a time; the kubelet applies each at once.
        with controller(cluster, leading=first, now=few, per_minute=2) as a, \
                controller(cluster, leading=second, now=few) as b:  # fmt: skip
            wait_until(lambda: a.count("resized") == 2, what="the first leader's two")
            first.clear()  # the Lease moves on mid-pass (a was held back by its rate limit)
            second.set()
            wait_until(lambda: a.count("resized") + b.count("resized") == 4, what="all four")
            b.passes()
            a.passes()
        asked = [path for method, path in writes(kube) if path.endswith("/resize")]
        assert sorted(asked) == sorted(f"/api/v1/namespaces/shop/pods/{name}/resize" for name in names)

    def test_of_two_replicas_only_the_leader_resizes(self, cluster: Any) -> None:
        kube, kubeconfig, _ = cluster
        kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "pod-tailor"}})
        kube.put(running())
        kube.put(pod_metrics(running(), "90Mi"), plural="pods")
        contenders = candidates(kubeconfig, "pod-tailor-boost-controller")
        with contextlib.ExitStack() as stack:
            replicas = [stack.enter_context(controller(cluster, leading=c.leading)) for c in contenders]
            for contender in contenders:
                contender.elector.start()
                stack.callback(contender.elector.stop)
            wait_until(lambda: sum(r.count("resized") for r in replicas) == 1, what="one resize")
            (leader,) = [r for r in replicas if r.leading.is_set()]
            leader.passes()
        assert leader.count("resized") == 1
        assert [w for w in writes(kube) if "leases" not in w[1]] == resized()


class TestWhatItLeavesAlone:
    def test_cpu_an_hpa_scales_on_by_utilization_and_all_a_vpa_sets(self, cluster: Any) -> None:
        kube = cluster[0]
        kube.register(VPA_PREFIX, "verticalpodautoscalers", "VerticalPodAutoscaler")
        kube.put(hpa(metrics=[utilization("cpu", 70)]))
        kube.put(running())
        kube.put(pod_metrics(running(), "90Mi"), plural="pods")
        with controller(cluster) as replica:
            wait_until(lambda: replica.count("resized") == 1, what="memory resized")
            kube.put(vpa(mode="Initial"))
            after = running("web-7d4b9c8f6d-vvvvv")
            kube.put(after)
            replica.passes(5)
        (_, _, ops) = kube.mutations[-3]
        assert {op["path"].rsplit("/", 2)[-1] for op in ops} == {"memory"}
        assert writes(kube) == resized()  # the Pod under the VPA: nothing at all

    @pytest.mark.parametrize(
        ("what", "change"),
        [
            ("the maintenance window closed (14:13 UTC, windows from 01:00 in Berlin for 4h)",
             {"policy": "nightly"}),
            ("the learning period not reached", {"hours": 10}),
            ("the namespace stop label", {"label": "off"}),
            ("a dry-run namespace", {"mode": "dry-run"}),
        ],
    )  # fmt: skip
    def test_nothing_is_resized_when(self, cluster: Any, what: str, change: dict[str, Any]) -> None:
        kube = cluster[0]
        labels = {"pod-tailor.io/mode": change.get("mode", "enforce"),
                  "pod-tailor.io/policy": change.get("policy", "rightsize")}  # fmt: skip
        if "label" in change:
            labels["pod-tailor.io/rightsize"] = change["label"]
        kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": labels}})
        kube.put(running())
        now = {WEB: profiles("0.2", 200, hours=change.get("hours", 336))}
        with controller(cluster, now=now) as replica:
            replica.passes(5)
        assert writes(kube) == [], what

    def test_memory_is_not_lowered_while_the_pod_uses_it(self, cluster: Any) -> None:
        kube = cluster[0]
        kube.put(running())
        kube.put(pod_metrics(running(), "500Mi"), plural="pods")
        with controller(cluster) as replica:
            wait_until(lambda: replica.count("resized") == 1, what="the cpu resize")
            replica.passes()
        assert writes(kube) == resized()
        assert app(stored(kube)) == {
            "requests": {"cpu": "350m", "memory": "600Mi"},
            "limits": {"memory": "1200Mi"},
        }
        assert any("/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/" in p for _, p in kube.requests)


class TestWhereItCannotResize:
    @pytest.mark.parametrize(
        ("minor", "served", "said"),
        [
            (32, True, "in-place resize needs Kubernetes 1.33+ (cluster 1.32): nothing is resized"),
            (
                35,
                False,
                "the cluster does not serve pods/resize (InPlacePodVerticalScaling off): nothing is resized",
            ),
        ],
    )
    def test_it_says_so_once_and_does_nothing(
        self, cluster: Any, caplog: pytest.LogCaptureFixture, minor: int, served: bool, said: str
    ) -> None:
        kube = cluster[0]
        kube.serve_version(1, minor)
        kube.resize_served = served
        kube.put(running())
        with caplog.at_level(logging.INFO, logger="pod_tailor.rightsize"), controller(cluster) as replica:
            replica.passes(5)
        assert writes(kube) == []
        assert [r.getMessage() for r in caplog.records if "nothing is resized" in r.getMessage()] == [
            f"rightsize: {said}"
        ]
        assert replica.metrics.supported._value.get() == 0


class TestDryRun:
    def test_it_prints_what_it_would_resize_and_what_it_resized_and_changes_nothing(
        self, cluster: Any
    ) -> None:
        kube = cluster[0]
        kube.put(running())
        kube.put(running("web-7d4b9c8f6d-zzzzz"))
        kube.put(pod_metrics(running(), "90Mi"), plural="pods")
        with controller(cluster, leading=threading.Event()) as replica:
            printed = io.StringIO()
            replica.controller.dry_run = printed
            # a Pod resized before, still pending: the kubelet deferred it
            entry = Entry(NOW - 600, (Change("app", "requests.cpu", "500m", "350m"),), "earlier")
            pending = stored(kube, "web-7d4b9c8f6d-zzzzz")
            pending["metadata"]["annotations"][RESIZED_ANNOTATION] = history_text((), entry)
            app(pending)["requests"]["cpu"] = "350m"
            deferred = "Node didn't have enough resource: cpu"
            pending["status"]["conditions"].append(
                {"type": "PodResizePending", "status": "True", "reason": "Deferred", "message": deferred}
            )
            kube.put(pending)
            wait_until(lambda: any(read_history(p["metadata"].get("annotations") or {})
                                   for p in replica.controller.pods.objects()), what="the watch")  # fmt: skip
            replica.controller.step()
            lines = replica.controller.resized()
        assert kube.mutations == []
        assert printed.getvalue().startswith(f"shop/{POD}: would resize app: requests.cpu 500m -> 350m")
        assert lines == [
            "shop/web-7d4b9c8f6d-zzzzz: 2026-09-21T14:03:20Z requests.cpu 500m -> 350m: asked, "
            "pending (deferred: Node didn't have enough resource: cpu)"
        ]
        assert replica.count("dry_run") == 1
